"""Reading one settings source, strictly: a source that cannot be read or parsed is a ``SettingsError``, never an
empty source (a run with fewer rules).

- ``parse_settings_text(text, label, path)``: strict JSON (what the reference's ``JSON.parse`` takes — no comments,
  no trailing commas, no ``NaN``/``Infinity``) plus one rule of our own: a key given twice in one object is an error
  (``JSON.parse`` keeps the last one silently, so a second ``"permissions"`` would drop the first one's deny rules).
  A UTF-8 byte order mark is accepted. The top level must be an object.
- ``read_settings_file(path, label)``: the file's object; ``None`` when there is no file (nothing to read is not an
  error); ``{}`` for an empty file; ``SettingsError`` when it exists and cannot be read (permissions, not a regular
  file — a FIFO is never waited on —, not UTF-8) or parsed.

``SettingsError`` names the source (``label``: ``--settings``, ``user settings``…), the file when there is one, and
the position (line, column) of the problem.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import os
import stat
from typing import Any

BOM = "\ufeff"


class SettingsError(Exception):
    """A settings source that cannot be read or parsed: the session must not start."""

    def __init__(self, label: str, problem: str, *, path: str | None = None, line: int | None = None,
                 column: int | None = None):
        self.label, self.problem, self.path, self.line, self.column = label, problem, path, line, column
        super().__init__(self.text())

    @property
    def where(self) -> str:
        """``user settings /home/me/.claude/settings.json`` / ``--settings JSON``."""
        return f"{self.label} {self.path}" if self.path else self.label

    def text(self) -> str:
        at = f", line {self.line}, column {self.column}" if self.line is not None else ""
        return f"cannot read {self.where}{at}: {self.problem}"


class _Constant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _Constant(name)


def _skip_string(s: str, i: int) -> int:
    """``s[i]`` is an opening quote: the index after its closing quote."""
    i += 1
    while i < len(s):
        ch = s[i]
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1
        i += 1
    return i


def _key_offsets(s: str, start: int, key: str) -> list[int]:
    """Offsets of ``key`` as a key of the object whose body starts at ``start`` (just after its ``{``)."""
    out: list[int] = []
    depth, i = 0, start
    while i < len(s):
        ch = s[i]
        if ch == '"':
            end = _skip_string(s, i)
            if depth == 0:
                rest = s[end:].lstrip()
                if rest.startswith(":"):
                    try:
                        name = json.loads(s[i:end])
                    except ValueError:
                        name = None
                    if name == key:
                        out.append(i)
            i = end
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            if depth == 0:
                break
            depth -= 1
        i += 1
    return out


def _constant_offset(s: str, name: str) -> int:
    """Where the bare ``NaN`` / ``Infinity`` token is (outside strings)."""
    i = 0
    while i < len(s):
        if s[i] == '"':
            i = _skip_string(s, i)
            continue
        if s.startswith(name, i):
            return i
        i += 1
    return 0


def _make_decoder() -> json.JSONDecoder:
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    plain_object = getattr(json.decoder, "JSONObject")  # the stdlib's object parser (not in its stubs)

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, object_hook: Any,
                     object_pairs_hook: Any, memo: Any = None) -> tuple[dict[str, Any], int]:
        s, start = s_and_end
        pairs, end = plain_object(s_and_end, strict, scan_once, None, list, memo)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                offsets = _key_offsets(s, start, key)
                at = offsets[1] if len(offsets) > 1 else start
                raise json.JSONDecodeError(f"the key {json.dumps(key)} is given twice in one object (only one would "
                                           f"count)", s, at)
            seen.add(key)
        return dict(pairs), end

    setattr(decoder, "parse_object", parse_object)
    # the pure-Python scanner: it calls our parse_object (the C one parses objects itself)
    setattr(decoder, "scan_once", getattr(json.scanner, "py_make_scanner")(decoder))
    return decoder


_DECODER = _make_decoder()


def _hint(text: str, exc: json.JSONDecodeError) -> tuple[str, int]:
    """The decoder's message and offset, said plainly for the mistakes JSONC habits make (a comment, a trailing
    comma: at the comma) and for a file that ends too early."""
    at = exc.pos
    if at < len(text) and text[at] == "/":
        return "a comment; settings files are strict JSON (no comments)", at
    before = text[:at].rstrip()
    if before.endswith(",") and text[at:at + 1] in ("]", "}"):
        return "a trailing comma; settings files are strict JSON", len(before) - 1
    if at >= len(text.rstrip()) and not exc.msg.startswith("Unterminated"):
        return "the text ends before the JSON does (an object or array is not closed)", at
    return exc.msg, at


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def parse_settings_text(text: str, label: str, path: str | None = None) -> dict[str, Any]:
    """A settings object from JSON text (a leading BOM accepted); ``SettingsError`` with the line and column."""
    if text.startswith(BOM):
        text = text[1:]
    if not text.strip():
        return {}
    try:
        data, end = _DECODER.raw_decode(text, len(text) - len(text.lstrip()))
        rest = text[end:]
        if rest.strip():
            raise json.JSONDecodeError("extra data after the settings object", text, end + len(rest) -
                                       len(rest.lstrip()))
    except json.JSONDecodeError as exc:
        problem, offset = _hint(text, exc)
        line, column = _position(text, offset)
        raise SettingsError(label, problem, path=path, line=line, column=column) from None
    except _Constant as exc:
        line, column = _position(text, _constant_offset(text, str(exc)))
        raise SettingsError(label, f"{exc} is not JSON", path=path, line=line, column=column) from None
    except RecursionError:
        raise SettingsError(label, "nested too deeply", path=path) from None
    if not isinstance(data, dict):
        kind = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(type(data), "a number")
        raise SettingsError(label, f"the settings must be a JSON object, not {kind}", path=path, line=1, column=1)
    return data


def read_settings_file(path: str, label: str) -> dict[str, Any] | None:
    """The file's settings object; None when there is no such file; ``SettingsError`` when it cannot be read."""
    try:  # non-blocking: a FIFO planted as a settings file must not hang the start
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SettingsError(label, exc.strerror or type(exc).__name__, path=path) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SettingsError(label, "not a regular file", path=path)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read()
    except OSError as exc:
        raise SettingsError(label, exc.strerror or type(exc).__name__, path=path) from None
    finally:
        os.close(fd)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw[:exc.start]
        line = head.count(b"\n") + 1
        column = exc.start - (head.rfind(b"\n") + 1) + 1
        raise SettingsError(label, "not UTF-8 text", path=path, line=line, column=column) from None
    return parse_settings_text(text, label, path)
