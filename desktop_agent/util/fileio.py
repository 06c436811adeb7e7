"""File I/O for the file tools: text decoding with encoding and line-ending detection, atomic writes.

Owns:
- ``read_text_file`` / ``read_text_file_with_mtime``: bytes → text with ``\\n`` line endings, plus the
  encoding (``utf-8``, ``utf-8-sig``, ``utf-16le``) and line-ending style (``LF``/``CRLF``) to write
  it back with (SPEC §3.7 notes, §8). Invalid UTF-8 round-trips byte for byte (``surrogateescape``).
- ``write_text_atomic`` / ``write_bytes_atomic``: temp file in the same directory, fsync,
  ``os.replace``, the old file's mode kept; a reader never sees a truncated file (DESIGN §3).
- Binary detection (by extension and by content), ``format_file_size`` (the reference agent's
  ``formatFileSize``), and per-path locks that serialise read-check-write critical sections.
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from typing import Literal

from desktop_agent.util import placeholders

Encoding = Literal["utf-8", "utf-8-sig", "utf-16le"]
LineEnding = Literal["LF", "CRLF"]

UTF8_BOM = b"\xef\xbb\xbf"
UTF16LE_BOM = b"\xff\xfe"
UTF16BE_BOM = b"\xfe\xff"

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
PDF_EXTENSION = ".pdf"
NOTEBOOK_EXTENSION = ".ipynb"

# Extensions that are never text (the reference agent's BINARY_EXTENSIONS, minus what Read handles).
BINARY_EXTENSIONS = frozenset({
    # images Read cannot show
    ".bmp", ".ico", ".tiff", ".tif", ".heic", ".heif", ".avif", ".psd", ".raw", ".cr2", ".nef",
    # video / audio
    ".mp4", ".mov", ".avi", ".mkv", ".webm", ".wmv", ".flv", ".m4v", ".mpeg", ".mpg",
    ".mp3", ".wav", ".ogg", ".flac", ".aac", ".m4a", ".wma", ".aiff", ".opus",
    # archives
    ".zip", ".tar", ".gz", ".bz2", ".7z", ".rar", ".xz", ".z", ".tgz", ".iso", ".zst", ".lz4", ".cab",
    # executables and objects
    ".exe", ".dll", ".so", ".dylib", ".bin", ".o", ".a", ".obj", ".lib", ".app", ".msi", ".deb", ".rpm",
    ".dmg", ".elf", ".ko",
    # office documents
    ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp",
    # fonts
    ".ttf", ".otf", ".woff", ".woff2", ".eot",
    # bytecode and packages
    ".pyc", ".pyo", ".class", ".jar", ".war", ".ear", ".node", ".wasm", ".rlib", ".whl", ".egg",
    # databases and data blobs
    ".sqlite", ".sqlite3", ".db", ".mdb", ".idx", ".pack", ".dat", ".npy", ".npz", ".pkl", ".pickle",
    ".parquet", ".feather", ".h5", ".hdf5", ".pt", ".pth", ".onnx", ".safetensors", ".ckpt",
    # design / 3D
    ".ai", ".eps", ".sketch", ".fig", ".xd", ".blend", ".3ds", ".max", ".fbx", ".swf", ".fla",
    ".lockb",
})


def extension(path: str) -> str:
    """Lower-case extension with its dot (``.bin``), or ``""``."""
    return os.path.splitext(path)[1].lower()


def format_file_size(size: int | float) -> str:
    """The reference agent's ``formatFileSize``: ``512 bytes``, ``322.3KB``, ``256KB``, ``1.5MB``, ``1GB``."""
    kb = size / 1024
    if kb < 1:
        return f"{int(size)} bytes"
    if kb < 1024:
        return _one_decimal(kb) + "KB"
    mb = kb / 1024
    if mb < 1024:
        return _one_decimal(mb) + "MB"
    return _one_decimal(mb / 1024) + "GB"


def _one_decimal(x: float) -> str:
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


# ---------------------------------------------------------------- decoding


def detect_encoding(head: bytes) -> Encoding:
    """UTF-16LE when the file starts with its BOM, UTF-8 (remembering a UTF-8 BOM) otherwise."""
    if head.startswith(UTF16LE_BOM):
        return "utf-16le"
    if head.startswith(UTF8_BOM):
        return "utf-8-sig"
    return "utf-8"


def decode_bytes(data: bytes) -> tuple[str, Encoding]:
    """Decode file bytes; the BOM is not part of the text. Undecodable UTF-8 bytes survive a round trip."""
    encoding = detect_encoding(data[:3])
    if encoding == "utf-16le":
        return data[2:].decode("utf-16-le", errors="surrogatepass" if len(data) % 2 == 0 else "replace"), encoding
    if encoding == "utf-8-sig":
        data = data[3:]
    return data.decode("utf-8", errors="surrogateescape"), encoding


def encode_text(text: str, encoding: str) -> bytes:
    if encoding == "utf-16le":
        return UTF16LE_BOM + text.encode("utf-16-le", errors="surrogatepass")
    body = text.encode("utf-8", errors="surrogateescape")
    return UTF8_BOM + body if encoding == "utf-8-sig" else body


def detect_line_ending(text: str) -> LineEnding:
    """``CRLF`` when CRLF line breaks outnumber bare LF ones (the reference agent's rule), else ``LF``."""
    if "\r" not in text:  # the common case, at memchr speed (counting "\r\n" is much slower)
        return "LF"
    crlf = text.count("\r\n")
    if not crlf:
        return "LF"
    lf = text.count("\n") - crlf
    return "CRLF" if crlf > lf else "LF"


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n") if "\r" in text else text


def to_display(text: str) -> str:
    """Text safe to send to the model: undecodable bytes (lone surrogates) become U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


class NotRegularFileError(OSError):
    """The path is a FIFO, socket or device (or a directory): refused without reading (it could block or never end)."""


def open_regular_fd(path: str) -> int:
    """An O_RDONLY descriptor of ``path`` if it is a regular file. Opened with O_NONBLOCK — a FIFO that a race
    put in place of the file does not wait for a writer — then ``fstat`` on what was actually opened; anything
    but a regular file is closed again and refused (``NotRegularFileError``). For a regular file O_NONBLOCK
    changes nothing."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(21 if stat.S_ISDIR(mode) else 22, "not a regular file", path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_text_file_with_mtime(path: str) -> tuple[str, Encoding, LineEnding, int]:
    """``(text with LF line endings, encoding, line ending, mtime in ms)``, mtime taken from the same open file,
    which must be a regular file (``open_regular_fd``)."""
    with os.fdopen(open_regular_fd(path), "rb") as fh:
        data = fh.read()
        mtime = os.fstat(fh.fileno()).st_mtime_ns // 1_000_000
    text, encoding = decode_bytes(data)
    ending = detect_line_ending(text)
    return normalize_newlines(text), encoding, ending, mtime


def read_text_file(path: str) -> tuple[str, Encoding, LineEnding]:
    """``(text with LF line endings, encoding, line ending)``."""
    text, encoding, ending, _ = read_text_file_with_mtime(path)
    return text, encoding, ending


# ---------------------------------------------------------------- binary detection


def looks_binary(head: bytes) -> bool:
    """Content sniffing on the first few KB: NUL bytes or mostly control characters mean binary.

    A UTF-8/UTF-16 BOM means text (UTF-16 is full of NULs). Bytes that are not valid UTF-8 are not
    held against a file (Latin-1 text is still text; Read shows U+FFFD for them).
    """
    if not head:
        return False
    if head.startswith((UTF8_BOM, UTF16LE_BOM, UTF16BE_BOM)):
        return False
    if b"\x00" in head:
        return True
    # Mostly control characters (other than tab, newlines, form feed, backspace, escape): binary.
    controls = len(head.translate(None, _NOT_CONTROL))
    return controls / len(head) > 0.1


_CONTROL = bytes(b for b in range(32) if b not in (8, 9, 10, 12, 13, 27)) + b"\x7f"
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL)


def sniff_binary_file(path: str, size: int = 8192) -> bool:
    try:
        with os.fdopen(open_regular_fd(path), "rb") as fh:
            return looks_binary(fh.read(size))
    except OSError:
        return False


# ---------------------------------------------------------------- writing

_UMASK: int | None = None


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        try:  # Linux: read it without changing it (thread-safe)
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("Umask:"):
                        _UMASK = int(line.split()[1], 8)
                        break
        except OSError:
            pass
        if _UMASK is None:
            old = os.umask(0o022)
            os.umask(old)
            _UMASK = old
    return _UMASK


def write_bytes_atomic(path: str, data: bytes, *, fsync: bool = True, durable_rename: bool = False,
                       mode: int | None = None) -> int:
    """Replace ``path`` with ``data`` atomically: temp file beside it, fsync, ``os.replace``.

    The data is on disk before the rename, so after a crash the path holds the old or the new
    content, never a torn file. ``durable_rename`` also fsyncs the directory so the rename itself
    survives a power cut (a few ms more; not needed for atomicity).

    Returns the new file's mtime in ms, taken from the temp file before the rename: it is ours even
    if someone else writes the path right after.

    A symlink is written through (its target is replaced, the link stays). The old file's permission
    bits (and owner, where allowed) are kept; a new file gets ``0o666 & ~umask`` — or ``mode`` for
    both when given (e.g. ``0o600`` for credentials). If anything fails the temp file is removed and
    the original is untouched. The one atomic writer of the project (settings files and the app's
    config use it too). The temp file is named ``.<name>.<pid>.<random>.tmp``; after the rename, the
    temps that killed writers of the same file left behind are removed (``remove_stale_temps``).
    """
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(target) or "."
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode) and placeholders.release(target):
        st = None  # the sandbox's placeholder for a protected file that did not exist: the file takes its name
    base = os.path.basename(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.{os.getpid()}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
            mtime = os.fstat(fh.fileno()).st_mtime_ns // 1_000_000
        if mode is not None:
            os.chmod(tmp, mode)
        elif st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if hasattr(os, "chown") and (st.st_uid != os.getuid() or st.st_gid != os.getgid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:
                    pass
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if fsync and durable_rename:
        _fsync_dir(directory)
    remove_stale_temps(directory, base)
    return mtime


def remove_stale_temps(directory: str, base: str) -> list[str]:
    """Delete the temp files earlier writes of ``base`` left in ``directory`` when their process was
    killed inside the writer (SIGKILL, power cut): ``.<base>.<pid>.<random>.tmp`` whose pid no longer
    runs. A temp of a live process (another writer now) is left alone, and so is any other file.
    Returns the names removed."""
    prefix = f".{base}."
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return removed
    for name in names:
        pid_text = name[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit() or _pid_running(int(pid_text)):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed.append(name)
        except OSError:
            pass
    return removed


def _pid_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's process, or not a pid: leave its file alone
    return True


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def write_text_atomic(path: str, text: str, encoding: str = "utf-8", line_ending: str = "LF") -> int:
    """Write ``text`` with the given encoding and line-ending style, atomically; returns the mtime in ms.

    With ``CRLF`` every line break is written as CRLF; with ``LF`` the text is written as it is.
    """
    if line_ending == "CRLF":
        text = normalize_newlines(text).replace("\n", "\r\n")
    return write_bytes_atomic(path, encode_text(text, encoding))


# ---------------------------------------------------------------- per-path locks

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def path_lock(path: str) -> threading.Lock:
    """One lock per normalized path: our own read-check-write sections never interleave on a file."""
    key = os.path.normpath(path)
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = threading.Lock()
        return lock
