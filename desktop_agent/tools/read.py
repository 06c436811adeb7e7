"""The Read tool (SPEC §3.5, §3.6, Appendix A "Read", B.1).

Owns reading a file for the model: text as ``<n>\\t<line>`` numbered lines (offset/limit, the
256 KB whole-file cap, the 25,000-token output cap), the ``file_unchanged`` stub for repeated reads,
the empty / past-the-end notices, binary refusal (by extension and by content), images as base64
image blocks fitted to the API's limits with Pillow (long edge ≤ 1568 px, ≤ 5 MB of base64; re-encoded,
JPEG at falling qualities if need be), PDFs as the text of their pages through pypdf (``pages``, at
most 20 a request; a longer PDF needs ``pages``), Jupyter notebooks as cells with their outputs, and a
sentence for directories. FIFOs, sockets and devices are refused, never opened for reading (``os.stat``
in ``validate_input``; files are opened with O_NONBLOCK and ``fstat``'ed, so a FIFO swapped in after the
check cannot hang the read). Every text read records what the model saw in ``ctx.read_file_state``;
Edit and Write rely on it.

Nothing of a Read runs on the event loop (the GUI's): stat and reading run on an I/O thread pool
(parallel Reads overlap their waits), decoding, splitting and numbering on one CPU thread (so the loop
is not starved of the GIL). Images are decoded, scaled and encoded on the I/O pool (Pillow releases the
GIL for that work); PDF bytes are read there and parsed by pypdf (pure Python) on the CPU thread. The
numbered text travels to ``map_result_to_block`` on the result data (``ReadData.rendered``).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import operator
import os
import re
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from desktop_agent.core.context import FileStateEntry, ToolUseContext
from desktop_agent.core.errors import ToolError
from desktop_agent.core.permission import PermissionTarget
from desktop_agent.util import fileio
from desktop_agent.core.tool import Tool, ToolInput, ToolResult, ValidationResult

MAX_FILE_SIZE_BYTES = int(0.25 * 1024 * 1024)  # whole-file reads (no limit)
DEFAULT_MAX_OUTPUT_TOKENS = 25_000
MAX_LINES_TO_READ = 2000  # a hint in the prompt, not a hard limit
PDF_MAX_PAGES_PER_READ = 20
# A PDF read without ``pages`` may have at most this many pages (the reference's
# PDF_AT_MENTION_INLINE_THRESHOLD is 10; we send text, not page images, and the prompt says 20).
PDF_INLINE_MAX_PAGES = 20
PDF_MAX_FILE_BYTES = 100 * 1024 * 1024  # the reference's PDF_MAX_EXTRACT_SIZE
# Images, as the Messages API takes them: at most 8000x8000 px and 5 MB of base64 each. It downscales
# any image whose long edge is over 1568 px itself, so we send at most that: fewer bytes, same tokens.
MAX_IMAGE_BASE64_BYTES = 5 * 1024 * 1024
MAX_IMAGE_RAW_BYTES = MAX_IMAGE_BASE64_BYTES * 3 // 4
API_MAX_IMAGE_DIMENSION = 8000
MAX_IMAGE_DIMENSION = 1568
JPEG_QUALITIES = (85, 70, 55, 40, 25)  # re-encoding steps when the image's own format is too large
MAX_IMAGE_FILE_BYTES = 100 * 1024 * 1024  # larger files are not read into memory at all
# Files read line by line instead of all at once when only a range is wanted.
STREAM_THRESHOLD_BYTES = 16 * 1024 * 1024

FILE_UNCHANGED_STUB = (
    "Wasted call — file unchanged since your last Read. Refer to that earlier tool_result instead."
)
EMPTY_FILE_NOTICE = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
DENIED_MESSAGE = "File is in a directory that is denied by your permission settings."
FILE_NOT_FOUND_CWD_NOTE = "Note: your current working directory is"
SIZE_TAIL = (
    "Use offset and limit parameters to read specific portions of the file, or search for specific content "
    "instead of reading the whole file."
)

BLOCKED_DEVICE_PATHS = frozenset({
    "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full", "/dev/stdin", "/dev/tty", "/dev/console",
    "/dev/stdout", "/dev/stderr", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2",
    "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2",
})


class ReadInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(
        None, ge=0,
        description="The line number to start reading from. Only provide if the file is too large to read at once")
    limit: int | None = Field(
        None, gt=0,
        description="The number of lines to read. Only provide if the file is too large to read at once.")
    pages: str | None = Field(
        None,
        description='Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF files. '
                    'Maximum 20 pages per request.')


# ---------------------------------------------------------------- helpers shared with Edit / Write


def file_not_found_message(abs_path: str, cwd: str) -> str:
    """``File does not exist. Note: your current working directory is <cwd>.`` plus a near match."""
    message = f"File does not exist. {FILE_NOT_FOUND_CWD_NOTE} {cwd}."
    similar = find_similar_file(abs_path)
    if similar:
        message += f" Did you mean {similar}?"
    return message


def find_similar_file(abs_path: str) -> str | None:
    """A file in the same directory with the same name but another extension (``app.js`` for ``app.ts``)."""
    directory, name = os.path.split(abs_path)
    stem = os.path.splitext(name)[0]
    if not stem:
        return None
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return None
    for entry in entries:
        if entry != name and os.path.splitext(entry)[0] == stem and os.path.isfile(os.path.join(directory, entry)):
            return os.path.join(directory, entry)
    return None


def max_output_tokens() -> int:
    raw = os.environ.get("CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_OUTPUT_TOKENS
    return value if value > 0 else DEFAULT_MAX_OUTPUT_TOKENS


def estimate_tokens(text: str) -> int:
    """A local token estimate (about four characters a token); no network round trip."""
    return math.ceil(len(text) / 4)


def add_line_numbers(content: str, start_line: int) -> str:
    """``<n>\\t<line>`` joined by ``\\n``, numbering from ``start_line`` (SPEC §3.6); ``""`` is one empty line."""
    lines = content.split("\n")
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, start_line))


def parse_pdf_page_range(pages: str) -> tuple[int, int | None] | None:
    """``"3"`` → (3, 3), ``"1-5"`` → (1, 5), ``"10-"`` → (10, None); None when malformed."""
    text = pages.strip()
    m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d*))?", text)
    if not m:
        return None
    first = int(m.group(1))
    if first < 1:
        return None
    if m.group(2) is None:
        return first, first
    if m.group(2) == "":
        return first, None
    last = int(m.group(2))
    if last < first:
        return None
    return first, last


# ---------------------------------------------------------------- text reading (worker thread)


@dataclass
class TextRange:
    content: str  # the selected lines joined by "\n" (raw: undecodable bytes as surrogates)
    num_lines: int
    start_line: int
    total_lines: int
    mtime: int
    size: int
    rendered: str | None = None  # the numbered text for the model (built in the worker thread)


def read_text_range(path: str, offset: int | None, limit: int | None) -> TextRange:
    """Read lines ``[offset, offset+limit)`` (1-based; offset 0 means 1) of a text file.

    UTF-8 files are cut into lines as bytes and only the wanted range is decoded; a range of a very
    large file is streamed. ``total_lines`` counts the empty line after a final newline, as the
    numbered output shows it; an empty file has 0 lines.
    """
    start = 0 if not offset else offset - 1
    with open_regular(path) as fh:
        st = os.fstat(fh.fileno())
        if limit is not None and st.st_size > STREAM_THRESHOLD_BYTES:
            head = fh.read(3)
            if not head.startswith(fileio.UTF16LE_BOM):
                fh.seek(3 if head.startswith(fileio.UTF8_BOM) else 0)
                return _stream_range(fh, start, limit, st)
            fh.seek(0)
        data = fh.read()
    return text_range_from_bytes(data, offset, limit, st.st_mtime_ns // 1_000_000, st.st_size)


def text_range_from_bytes(data: bytes, offset: int | None, limit: int | None, mtime: int, size: int) -> TextRange:
    """``read_text_range`` on bytes already read."""
    start = 0 if not offset else offset - 1
    if data.startswith(fileio.UTF16LE_BOM):
        return _range_of_text(fileio.normalize_newlines(fileio.decode_bytes(data)[0]), start, limit, mtime, size)
    if data.startswith(fileio.UTF8_BOM):
        data = data[3:]
    if not data:
        return TextRange("", 0, start + 1, 0, mtime, size)
    if start == 0:
        total = data.count(b"\n") + 1
        if limit is None or limit >= total:
            text = fileio.normalize_newlines(data.decode("utf-8", errors="surrogateescape"))
            return TextRange(text, total, 1, total, mtime, size)
        first = 0
    else:
        first = _line_start(data, start)
        if first == -1:
            return TextRange("", 0, start + 1, data.count(b"\n") + 1, mtime, size)
        total = start + data.count(b"\n", first) + 1  # one pass over the file in all
    after = -1 if limit is None else _line_start(data, limit, first)
    if after == -1:  # the range runs to the end of the file
        segment, count = data[first:], total - start
    else:
        segment, count = data[first:after - 1], limit
        if segment.endswith(b"\r"):
            segment = segment[:-1]  # the CR of the CRLF that ends the range
    text = segment.decode("utf-8", errors="surrogateescape")
    return TextRange(fileio.normalize_newlines(text), count, start + 1, total, mtime, size)


def _line_start(data: bytes, n: int, pos: int = 0, step: int = 65536) -> int:
    """Index where the line ``n`` lines after the one starting at ``pos`` starts; -1 past the end.

    Counts newlines chunk by chunk at C speed and splits only the chunk that holds the answer.
    """
    if n == 0:
        return pos
    size = len(data)
    while pos < size:
        chunk_end = min(size, pos + step)
        found = data.count(b"\n", pos, chunk_end)
        if found >= n:
            rest = data[pos:chunk_end].split(b"\n", n)[n]
            return chunk_end - len(rest)
        n -= found
        pos = chunk_end
    return -1


def _range_of_text(text: str, start: int, limit: int | None, mtime: int, size: int) -> TextRange:
    if not text:
        return TextRange("", 0, start + 1, 0, mtime, size)
    lines = text.split("\n")
    total = len(lines)
    if start == 0 and (limit is None or limit >= total):
        return TextRange(text, total, 1, total, mtime, size)
    chosen = lines[start:start + limit] if limit is not None else lines[start:]
    return TextRange("\n".join(chosen), len(chosen), start + 1, total, mtime, size)


_prefixes: list[str] = []
_prefix_lock = threading.Lock()


def _line_prefixes(first: int, count: int) -> list[str]:
    """``["<n>\\t", ...]`` for lines first..first+count-1, from a cache grown on demand."""
    last = first + count
    if last > len(_prefixes) + 1:
        with _prefix_lock:
            if last > len(_prefixes) + 1:
                _prefixes.extend(f"{n}\t" for n in range(len(_prefixes) + 1, max(last, 2 * len(_prefixes)) + 1))
    return _prefixes[first - 1:last - 1]


def render_numbered(content: str, start_line: int) -> str:
    """``add_line_numbers`` for large outputs: same text, C-level concatenation."""
    lines = content.split("\n")
    return "\n".join(map(operator.add, _line_prefixes(start_line, len(lines)), lines))


def finish_text(rng: TextRange, offset: int | None, max_tokens: int) -> TextRange:
    """The token cap, then the numbered display text."""
    tokens = estimate_tokens(rng.content)
    if tokens > max_tokens:
        raise ToolError(
            f"File content ({tokens} tokens) exceeds maximum allowed tokens ({max_tokens}). {SIZE_TAIL}", wrap=False)
    if rng.num_lines:
        rng.rendered = fileio.to_display(render_numbered(rng.content, max(offset or 1, 1)))
    return rng


def load_text(path: str, offset: int | None, limit: int | None, max_tokens: int,
              sniff_ext: str | None = None) -> TextRange:
    """A whole text Read in one call: binary sniffing (with ``sniff_ext``), range, token cap, numbering."""
    if sniff_ext is not None and fileio.sniff_binary_file(path):
        raise ToolError(_binary_message(sniff_ext))
    return finish_text(read_text_range(path, offset, limit), offset, max_tokens)


def _stream_range(fh: Any, start: int, limit: int, st: os.stat_result) -> TextRange:
    chosen: list[str] = []
    total = 0
    last_ended_with_newline = True
    for total, raw in enumerate(fh, 1):
        last_ended_with_newline = raw.endswith(b"\n")
        if start < total <= start + limit:
            if last_ended_with_newline:
                raw = raw[:-2] if raw.endswith(b"\r\n") else raw[:-1]
            chosen.append(raw.decode("utf-8", errors="surrogateescape"))
    if total and last_ended_with_newline:
        total += 1  # the empty line after the final newline
        if start < total <= start + limit:
            chosen.append("")
    return TextRange("\n".join(chosen), len(chosen), start + 1, total, st.st_mtime_ns // 1_000_000, st.st_size)


# ---------------------------------------------------------------- images, PDFs, notebooks


def _image_media_type(data: bytes, ext: str) -> str:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
            ".webp": "image/webp"}.get(ext, "image/png")


def read_image(path: str) -> dict[str, Any]:
    """An image as base64 within the API's limits (worker thread).

    With Pillow (a dependency) the image is decoded in full, so a corrupt or truncated file is an error
    here rather than a request the API rejects; one that fits (long edge ≤ ``MAX_IMAGE_DIMENSION``,
    ≤ ``MAX_IMAGE_RAW_BYTES``, a format the API takes) is sent byte for byte, any other is downscaled
    and re-encoded (``fit_image``). Without Pillow the bytes go as they are if they are small enough.
    """
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_IMAGE_FILE_BYTES:
            raise ToolError(
                f"Image file is too large to read ({fileio.format_file_size(size)}); the maximum is "
                f"{fileio.format_file_size(MAX_IMAGE_FILE_BYTES)}. Resize or compress it first (for example "
                "with ImageMagick: convert in.png -resize 50% out.png) and read the smaller copy.")
        data = fh.read()
    if not data:
        raise ToolError(f"Image file is empty: {path}")
    media_type = _image_media_type(data, fileio.extension(path))
    original_size = len(data)
    dimensions: dict[str, int] | None = None
    try:
        import PIL.Image  # noqa: F401 - a dependency; a broken install still sends small images
        have_pillow = True
    except ImportError:
        have_pillow = False
    if have_pillow:
        data, media_type, dimensions = fit_image(data, path)
    if len(data) > MAX_IMAGE_RAW_BYTES:
        how = ("Downscaling did not bring it under the limit." if have_pillow else
               "Pillow is not installed, so the image cannot be downscaled.")
        raise ToolError(
            f"Image file is too large to read ({fileio.format_file_size(len(data))}); the maximum is "
            f"{fileio.format_file_size(MAX_IMAGE_RAW_BYTES)}. {how} Resize or compress it first (for example "
            f"with ImageMagick: convert in.png -resize 50% out.png) and read the smaller copy.")
    return {
        "type": "image",
        "file": {"base64": base64.b64encode(data).decode("ascii"), "type": media_type,
                 "originalSize": original_size, "dimensions": dimensions},
    }


# Pillow's format names the API takes as they are (MPO: the multi-picture JPEG many cameras write).
_API_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "MPO": "image/jpeg", "GIF": "image/gif",
                "WEBP": "image/webp"}


def fit_image(data: bytes, path: str) -> tuple[bytes, str, dict[str, int]]:
    """``(bytes, media_type, dimensions)`` for an image the API accepts, with Pillow.

    Kept byte for byte when it fits. Otherwise scaled so its long edge is at most
    ``MAX_IMAGE_DIMENSION`` (never enlarged; EXIF orientation applied; a GIF's first frame) and
    encoded in its own kind (PNG for PNG, GIF and formats the API does not take, JPEG for JPEG, WebP
    for WebP); if that is over ``MAX_IMAGE_RAW_BYTES``, JPEG at falling qualities, then at half the
    size, until it fits.
    """
    from PIL import Image, ImageOps

    try:
        img = Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise ToolError(f"Image {path} has too many pixels to decode safely ({exc}).") from None
    except Exception as exc:  # UnidentifiedImageError, SyntaxError, ValueError, ...
        raise ToolError(_bad_image_message(path, exc)) from None
    with img:
        fmt = img.format or ""
        width, height = img.size
        dims = {"originalWidth": width, "originalHeight": height, "displayWidth": width, "displayHeight": height}
        scale = min(1.0, MAX_IMAGE_DIMENSION / max(width, height, 1))
        target = (max(1, round(width * scale)), max(1, round(height * scale)))
        try:
            if fmt in ("JPEG", "MPO") and scale < 1.0:
                img.draft("RGB", target)  # the decoder scales by 1/2, 1/4 or 1/8 first: far less work
            img.load()  # the whole first frame: a truncated or corrupt file fails here, not at the API
            if fmt in _API_FORMATS and len(data) <= MAX_IMAGE_RAW_BYTES and scale == 1.0:
                return data, _API_FORMATS[fmt], dims
            frame = ImageOps.exif_transpose(img) or img
        except Exception as exc:
            raise ToolError(_bad_image_message(path, exc)) from None
        if frame.size != img.size and frame.size == (img.height, img.width):
            target = (target[1], target[0])  # rotated by its EXIF orientation
        frame = _normalize_mode(frame)
        first = {"JPEG": "JPEG", "MPO": "JPEG", "WEBP": "WEBP"}.get(fmt, "PNG")
        size = target
        while True:
            resized = frame if frame.size == size else frame.resize(size, Image.Resampling.LANCZOS,
                                                                    reducing_gap=3.0)
            steps = [(first, 85)] + [("JPEG", q) for q in JPEG_QUALITIES if not (first == "JPEG" and q == 85)]
            for out_format, quality in steps:
                out = _encode(resized, out_format, quality)
                if len(out) <= MAX_IMAGE_RAW_BYTES:
                    dims.update(displayWidth=size[0], displayHeight=size[1])
                    return out, _API_FORMATS[out_format], dims
            if size == (1, 1):
                raise ToolError(f"Image {path} could not be brought under the API's size limit.")
            size = (max(1, size[0] // 2), max(1, size[1] // 2))


def _bad_image_message(path: str, exc: BaseException) -> str:
    detail = str(exc).strip() or type(exc).__name__
    return (f"Could not read image {path}: it is corrupt or not a PNG, JPEG, GIF or WebP image ({detail}).")


def _normalize_mode(img: Any) -> Any:
    """RGB, RGBA, L or LA: modes every encoder and LANCZOS handle (palette, 16-bit, CMYK converted)."""
    if img.mode in ("RGB", "RGBA", "L", "LA"):
        return img
    has_alpha = img.mode in ("PA", "RGBa", "La") or "transparency" in img.info or img.mode.endswith("A")
    if img.mode.startswith("I;16") or img.mode in ("I", "F"):
        return img.convert("I").point(lambda v: v / 256).convert("L") if img.mode != "F" else img.convert("L")
    return img.convert("RGBA" if has_alpha else "RGB")


def _encode(img: Any, out_format: str, quality: int) -> bytes:
    buf = io.BytesIO()
    if out_format == "JPEG":
        if img.mode in ("RGBA", "LA"):  # no alpha in JPEG: flatten onto white, as a viewer shows it
            from PIL import Image

            background = Image.new("RGB", img.size, (255, 255, 255))
            background.paste(img.convert("RGBA"), mask=img.convert("RGBA").getchannel("A"))
            img = background
        img.save(buf, format="JPEG", quality=quality, optimize=False)
    elif out_format == "WEBP":
        img.save(buf, format="WEBP", quality=quality, method=4)
    else:
        img.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def image_metadata_text(dims: dict[str, int] | None) -> str | None:
    """The reference's ``createImageMetadataText`` for a resized image; None when it was sent as it is."""
    if not dims:
        return None
    ow, oh = dims.get("originalWidth"), dims.get("originalHeight")
    dw, dh = dims.get("displayWidth"), dims.get("displayHeight")
    if not ow or not oh or not dw or not dh or (ow, oh) == (dw, dh):
        return None
    return (f"[Image: original {ow}x{oh}, displayed at {dw}x{dh}. Multiply coordinates by {ow / dw:.2f} to map "
            "to original image.]")


# ---------------------------------------------------------------- PDFs (pypdf)


def read_pdf_bytes(path: str) -> bytes:
    """The PDF's bytes (I/O thread), refusing one over ``PDF_MAX_FILE_BYTES``."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > PDF_MAX_FILE_BYTES:
            raise ToolError(
                f"PDF file is too large to read ({fileio.format_file_size(size)}); the maximum is "
                f"{fileio.format_file_size(PDF_MAX_FILE_BYTES)}. Split it or extract its text with another "
                "tool through Bash.")
        return fh.read()


def extract_pdf_pages(data: bytes, path: str, pages: str | None, max_tokens: int) -> dict[str, Any]:
    """The text of a page range (or of the whole PDF if it has at most ``PDF_INLINE_MAX_PAGES`` pages),
    with pypdf (CPU thread). Encrypted PDFs that an empty password does not open, and damaged ones,
    are errors that say so."""
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its recoverable-damage warnings are not ours
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception:  # pypdf's DependencyError for AES without a crypto library, and others
                opened = 0
            if not opened:
                raise ToolError(
                    f"Cannot read PDF {path}: it is encrypted with a password. Ask the user for a decrypted "
                    "copy (for example: qpdf --decrypt --password=... in.pdf out.pdf).")
        total = len(reader.pages)
    except ToolError:
        raise
    except Exception as exc:
        detail = str(exc).strip() or type(exc).__name__
        raise ToolError(f"Cannot read PDF {path}: the file is damaged or is not a PDF ({detail}).") from None
    if pages is None:
        if total > PDF_INLINE_MAX_PAGES:
            raise ToolError(
                f"This PDF has {total} pages, which is too many to read at once. Use the pages parameter "
                f'to read specific page ranges (e.g., pages: "1-5"). Maximum {PDF_MAX_PAGES_PER_READ} pages per '
                "request.")
        first, last = 1, total
    else:
        parsed = parse_pdf_page_range(pages)
        assert parsed is not None and parsed[1] is not None  # validate_input checked it
        first, last = parsed
        if first > total:
            raise ToolError(
                f'Page range "{pages}" is out of range: this PDF has {total} page{"" if total == 1 else "s"}.')
        last = min(last, total)
    out: list[dict[str, Any]] = []
    for number in range(first, last + 1):
        try:
            text = reader.pages[number - 1].extract_text() or ""
        except Exception as exc:
            text = f"(the text of this page could not be extracted: {str(exc).strip() or type(exc).__name__})"
        out.append({"page": number, "text": text.replace("\x00", "").rstrip()})
    tokens = estimate_tokens("".join(p["text"] for p in out))
    if tokens > max_tokens:
        raise ToolError(
            f"PDF text ({tokens} tokens) exceeds maximum allowed tokens ({max_tokens}). Use the pages parameter "
            "to read fewer pages at a time.", wrap=False)
    return {"type": "pdf", "file": {"filePath": path, "pages": out, "totalPages": total}}


async def read_pdf(path: str, pages: str | None) -> dict[str, Any]:
    """Read a PDF off the event loop: bytes on the I/O pool, pypdf (pure Python) on the CPU thread."""
    data = await run_io(read_pdf_bytes, path)
    return await run_cpu(extract_pdf_pages, data, path, pages, max_output_tokens())


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def read_notebook(text: str) -> list[dict[str, Any]]:
    """Cells with their outputs: ``[{cell_id, cell_type, source, language, outputs:[{text|image}]}]``."""
    try:
        nb = json.loads(text)
    except ValueError as exc:
        raise ToolError(f"Notebook is not valid JSON: {exc}") from exc
    language = (nb.get("metadata", {}).get("language_info", {}) or {}).get("name") or "python"
    cells = []
    for index, cell in enumerate(nb.get("cells", [])):
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        outputs: list[dict[str, Any]] = []
        for output in cell.get("outputs", []) or []:
            outputs.extend(_notebook_output(output))
        cells.append({
            "cell_id": cell.get("id") or f"cell-{index}",
            "cell_type": cell.get("cell_type", "code"),
            "source": source,
            "language": language,
            "execution_count": cell.get("execution_count"),
            "outputs": outputs,
        })
    return cells


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _notebook_output(output: dict[str, Any]) -> list[dict[str, Any]]:
    kind = output.get("output_type")
    if kind == "stream":
        return [{"text": _join(output.get("text"))}]
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {}) or {}
        out: list[dict[str, Any]] = []
        if "text/plain" in data:
            out.append({"text": _join(data["text/plain"])})
        for media in ("image/png", "image/jpeg"):
            if media in data:
                out.append({"image": {"media_type": media, "data": _join(data[media]).replace("\n", "")}})
                break
        return out
    if kind == "error":
        tb = "\n".join(output.get("traceback", []) or [])
        return [{"text": _ANSI.sub("", f"{output.get('ename', '')}: {output.get('evalue', '')}\n{tb}").strip()}]
    return []


def _cell_blocks(cell: dict[str, Any]) -> list[dict[str, Any]]:
    cid = cell["cell_id"]
    meta = ""
    if cell["cell_type"] != "code":
        meta += f"<cell_type>{cell['cell_type']}</cell_type>"
    elif cell["language"] != "python":
        meta += f"<language>{cell['language']}</language>"
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": f'<cell id="{cid}">{meta}{fileio.to_display(cell["source"])}</cell id="{cid}">'}]
    for out in cell["outputs"]:
        if "text" in out:
            blocks.append({"type": "text", "text": fileio.to_display(out["text"])})
        else:
            img = out["image"]
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": img["media_type"],
                                                       "data": img["data"]}})
    return blocks


# ---------------------------------------------------------------- worker-thread jobs

# Two stages, two pools. File system calls (stat, open, read) run on a wide I/O pool: they release
# the GIL, so parallel Reads overlap their disk or network waits. Turning the bytes into numbered
# text is CPU work under the GIL; it runs on one CPU thread, because more threads would not finish
# sooner and would starve the event loop (the GUI's): with ten parallel 1 MB Reads on a warm cache
# the longest loop stall measured ~10-20 ms with one CPU thread and 65-190 ms with several
# (bench/bench_file_tools.py).
IO_THREADS = 10  # as CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY's default
CPU_THREADS = 1
_pools: dict[str, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(kind: str) -> ThreadPoolExecutor:
    pool = _pools.get(kind)
    if pool is None:
        with _pools_lock:
            pool = _pools.get(kind)
            if pool is None:
                workers = IO_THREADS if kind == "io" else CPU_THREADS
                pool = _pools[kind] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"file-read-{kind}")
    return pool


async def run_io(fn: Any, *args: Any) -> Any:
    """Run blocking file system work off the event loop (exceptions propagate)."""
    return await asyncio.get_running_loop().run_in_executor(_pool("io"), fn, *args)


async def run_cpu(fn: Any, *args: Any) -> Any:
    """Run CPU-heavy text work on the single CPU thread (exceptions propagate)."""
    return await asyncio.get_running_loop().run_in_executor(_pool("cpu"), fn, *args)


def special_file_message(abs_path: str, mode: int) -> str:
    """Why a FIFO, socket or device is not read (opening or reading one can block forever or never end)."""
    if stat.S_ISFIFO(mode):
        kind = "a named pipe (FIFO)"
    elif stat.S_ISSOCK(mode):
        kind = "a socket"
    elif stat.S_ISCHR(mode):
        kind = "a character device"
    elif stat.S_ISBLK(mode):
        kind = "a block device"
    else:
        kind = "a special file"
    return (f"Cannot read '{abs_path}': it is not a regular file (it is {kind}; reading it could block or "
            "never end).")


def open_regular(path: str) -> Any:
    """``open(path, "rb")`` for a regular file only. Opened with O_NONBLOCK (opening a FIFO that a race put
    in place of the file does not wait for a writer), then ``fstat``: anything but a regular file is
    closed again and refused. For a regular file O_NONBLOCK changes nothing."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(special_file_message(path, st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def stat_regular_file(abs_path: str, cwd: str) -> os.stat_result:
    """stat, turning a missing path, a directory or a special file into the model-facing errors."""
    try:
        st = os.stat(abs_path)
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(file_not_found_message(abs_path, cwd), wrap=False) from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"{abs_path} is a directory, not a file. Use the Glob tool or Bash `ls` to list its contents.",
            wrap=False)
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(special_file_message(abs_path, st.st_mode))
    return st


def _stat_or_none(abs_path: str) -> os.stat_result | None:
    try:
        return os.stat(abs_path)
    except (OSError, ValueError):
        return None


def _image_job(abs_path: str, cwd: str) -> dict[str, Any]:
    stat_regular_file(abs_path, cwd)
    return read_image(abs_path)


def _io_job(abs_path: str, cwd: str, offset: int | None, limit: int | None, max_tokens: int,
            entry: FileStateEntry | None) -> tuple[str, Any]:
    """Stage 1: checks and the raw bytes. ``("file_unchanged", None)``, ``("bytes", (data, mtime, size))``,
    or ``("text", TextRange)`` for a range of a very large file (streamed here, line by line)."""
    st = stat_regular_file(abs_path, cwd)
    effective_offset = offset if offset is not None else 1
    # Repeated read of the same range of an unchanged file: a stub instead of the same text again.
    if (entry is not None and not entry.is_partial_view and entry.offset is not None
            and entry.offset == effective_offset and entry.limit == limit
            and st.st_mtime_ns // 1_000_000 == entry.timestamp):
        return "file_unchanged", None
    if limit is None and st.st_size > MAX_FILE_SIZE_BYTES:
        raise ToolError(
            f"File content ({fileio.format_file_size(st.st_size)}) exceeds maximum allowed size "
            f"({fileio.format_file_size(MAX_FILE_SIZE_BYTES)}). {SIZE_TAIL}", wrap=False)
    if limit is not None and st.st_size > STREAM_THRESHOLD_BYTES:
        return "text", load_text(abs_path, offset, limit, max_tokens, sniff_ext=fileio.extension(abs_path))
    with open_regular(abs_path) as fh:
        data = fh.read()
        st = os.fstat(fh.fileno())
    return "bytes", (data, st.st_mtime_ns // 1_000_000, st.st_size)


def _cpu_job(data: bytes, mtime: int, size: int, ext: str, offset: int | None, limit: int | None,
             max_tokens: int) -> tuple[str, Any]:
    """Stage 2: binary sniffing, notebook cells or the text range, token cap, numbering."""
    if ext == fileio.NOTEBOOK_EXTENSION:
        text = fileio.normalize_newlines(fileio.decode_bytes(data)[0])
        return "notebook", (text, mtime, read_notebook(text))
    if fileio.looks_binary(data[:8192]):
        raise ToolError(_binary_message(ext))
    return "text", finish_text(text_range_from_bytes(data, offset, limit, mtime, size), offset, max_tokens)


# ---------------------------------------------------------------- the tool


class ReadData(dict):
    """Read's result data (a plain dict for JSON) carrying the numbered text built off the event loop."""

    rendered: str | None = None



class ReadTool(Tool):
    name = "Read"
    input_model = ReadInput
    max_result_size_chars = math.inf

    def is_concurrency_safe(self, input: Any) -> bool:
        return True

    def is_read_only(self, input: Any) -> bool:
        return True

    async def validate_input(self, input: ReadInput, ctx: ToolUseContext) -> ValidationResult:
        if input.pages is not None:
            parsed = parse_pdf_page_range(input.pages)
            if parsed is None:
                return ValidationResult.fail(
                    f'Invalid pages parameter: "{input.pages}". Use formats like "1-5", "3", or "10-20". '
                    "Pages are 1-indexed.", 7)
            first, last = parsed
            if last is None or last - first + 1 > PDF_MAX_PAGES_PER_READ:
                return ValidationResult.fail(
                    f'Page range "{input.pages}" exceeds maximum of {PDF_MAX_PAGES_PER_READ} pages per request. '
                    "Please use a smaller range.", 8)
        if "\x00" in input.file_path:  # run_tool_use refuses this first; a direct call gets it here
            return ValidationResult.fail("The file path contains a NUL character (\\0), which no path can contain.", 10)
        abs_path = ctx.expand(input.file_path)
        if ctx.path_denied(abs_path, "read"):
            return ValidationResult.fail(DENIED_MESSAGE, 1)
        ext = fileio.extension(abs_path)
        if ext in fileio.BINARY_EXTENSIONS:
            return ValidationResult.fail(_binary_message(ext), 4)
        if abs_path in BLOCKED_DEVICE_PATHS:
            return ValidationResult.fail(
                f"Cannot read '{abs_path}': this device file would block or produce infinite output.", 9)
        # FIFOs, sockets and devices are refused before any permission prompt (stat never blocks;
        # ``call`` checks again on the opened descriptor).
        st = await run_io(_stat_or_none, abs_path)
        if st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            return ValidationResult.fail(special_file_message(abs_path, st.st_mode), 9)
        return ValidationResult.ok()

    def permission_target(self, input: ReadInput, ctx: ToolUseContext) -> PermissionTarget:
        return PermissionTarget(kind="read", path=ctx.expand(input.file_path), summary=input.file_path)

    async def call(self, input: ReadInput, ctx: ToolUseContext) -> ToolResult:
        abs_path = ctx.expand(input.file_path)
        ext = fileio.extension(abs_path)
        if ext in fileio.IMAGE_EXTENSIONS:
            return ToolResult(await run_io(_image_job, abs_path, ctx.cwd))
        if ext == fileio.PDF_EXTENSION:
            await run_io(stat_regular_file, abs_path, ctx.cwd)
            return ToolResult(await read_pdf(abs_path, input.pages))

        offset = input.offset if input.offset is not None else 1
        limit = input.limit
        entry = ctx.read_file_state.get(abs_path)
        kind, payload = await run_io(_io_job, abs_path, ctx.cwd, input.offset, limit, max_output_tokens(), entry)
        if kind == "bytes":
            data_bytes, mtime, size = payload
            kind, payload = await run_cpu(_cpu_job, data_bytes, mtime, size, ext, input.offset, limit,
                                          max_output_tokens())
        if kind == "file_unchanged":
            return ToolResult({"type": "file_unchanged", "file": {"filePath": input.file_path}})
        if kind == "notebook":
            text, mtime, cells = payload
            ctx.read_file_state.set(abs_path, FileStateEntry(content=text, timestamp=mtime, offset=offset,
                                                             limit=limit))
            return ToolResult({"type": "notebook", "file": {"filePath": input.file_path, "cells": cells}})
        rng: TextRange = payload
        ctx.read_file_state.set(abs_path, FileStateEntry(content=rng.content, timestamp=rng.mtime, offset=offset,
                                                         limit=limit))
        data = ReadData({
            "type": "text",
            "file": {"filePath": input.file_path, "content": rng.content, "numLines": rng.num_lines,
                     "startLine": offset, "totalLines": rng.total_lines},
        })
        data.rendered = rng.rendered
        return ToolResult(data)

    def map_result_to_block(self, data: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        kind = data.get("type")
        file = data.get("file", {})
        if kind == "file_unchanged":
            content: Any = FILE_UNCHANGED_STUB
        elif kind == "image":
            content = [{"type": "image", "source": {"type": "base64", "data": file["base64"],
                                                    "media_type": file["type"]}}]
            note = image_metadata_text(file.get("dimensions"))
            if note:
                content.append({"type": "text", "text": note})
        elif kind == "pdf":
            if any(p["text"] for p in file["pages"]):
                content = "\n\n".join(f'<page number="{p["page"]}">\n{p["text"]}\n</page>' for p in file["pages"])
            else:
                content = ("<system-reminder>Warning: the PDF has no extractable text in this range (its pages may "
                           "be scanned images).</system-reminder>")
        elif kind == "notebook":
            blocks = [b for cell in file["cells"] for b in _cell_blocks(cell)]
            content = blocks or EMPTY_FILE_NOTICE
        else:
            rendered = getattr(data, "rendered", None)
            if file["numLines"] > 0:
                content = rendered if rendered is not None else fileio.to_display(
                    add_line_numbers(file["content"], max(file["startLine"], 1)))
            elif file["totalLines"] == 0:
                content = EMPTY_FILE_NOTICE
            else:
                content = (
                    "<system-reminder>Warning: the file exists but is shorter than the provided offset "
                    f"({file['startLine']}). The file has {file['totalLines']} lines.</system-reminder>")
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


def _binary_message(ext: str) -> str:
    what = f"a binary {ext} file" if ext else "a binary file"
    return (f"This tool cannot read binary files. The file appears to be {what}. "
            "Please use appropriate tools for binary file analysis.")


__all__ = ["ReadTool", "ReadInput", "read_text_range", "load_text", "file_not_found_message", "add_line_numbers",
           "render_numbered", "FILE_UNCHANGED_STUB", "EMPTY_FILE_NOTICE", "DENIED_MESSAGE"]
