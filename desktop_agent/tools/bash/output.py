"""A command's output: bounded accumulation (``OutputBuffer``: head and tail kept, the middle counted), the
cap of 30,000 characters with a note of how much was cut, and which exit codes are not failures (exit code 1 of
grep/rg/find/diff/test/git diff is a normal result, B.1).
"""

from __future__ import annotations

import os
import re
import shlex


MAX_OUTPUT_CHARS = 30_000
# Bytes kept from the start and from the end of a command's output (enough for 30,000 characters each).
_HEAD_BYTES = 4 * MAX_OUTPUT_CHARS
_TAIL_BYTES = 4 * MAX_OUTPUT_CHARS
_PROGRESS_CHARS = 4000


class OutputBuffer:
    """A command's output with bounded memory: the first and the last bytes, and how many fell between."""

    def __init__(self, head_bytes: int = _HEAD_BYTES, tail_bytes: int = _TAIL_BYTES):
        self.head = bytearray()
        self.tail = bytearray()
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.total = 0
        self.dropped = 0
        self.newlines = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        room = self.head_bytes - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            excess = len(self.tail) - self.tail_bytes
            if excess > self.tail_bytes:  # trim in big steps (amortised)
                self.dropped += excess
                del self.tail[:excess]

    def _trim_tail(self) -> bytes:
        excess = len(self.tail) - self.tail_bytes
        tail = bytes(self.tail[excess:]) if excess > 0 else bytes(self.tail)
        dropped = self.dropped + max(0, excess)
        if dropped:  # do not start in the middle of a UTF-8 sequence
            i = 0
            while i < len(tail) and i < 4 and (tail[i] & 0xC0) == 0x80:
                i += 1
            tail = tail[i:]
        return tail

    def parts(self) -> tuple[str, str, int]:
        """(head text, tail text, bytes not kept between them). With nothing dropped the tail is empty."""
        tail = self._trim_tail()
        missing = self.total - len(self.head) - len(tail)
        if not missing:
            return (bytes(self.head) + tail).decode("utf-8", "replace"), "", 0
        return bytes(self.head).decode("utf-8", "replace"), tail.decode("utf-8", "replace"), missing

    def recent_text(self, chars: int = _PROGRESS_CHARS) -> str:
        """The last ``chars`` characters (for progress display)."""
        source = self.tail if self.tail else self.head
        data = bytes(source[-4 * chars:])
        return data.decode("utf-8", "replace")[-chars:]


_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t\r\f\v]*\n)+")


def cap_output(head: str, tail: str = "", missing: int = 0, limit: int = MAX_OUTPUT_CHARS) -> str:
    """At most ``limit`` characters: head and tail kept, the middle replaced by a note of how much was cut.

    ``head`` + ``tail`` is the text, with ``missing`` characters (bytes, for non-ASCII output: an
    estimate) that were not kept between them.
    """
    if not missing and len(head) + len(tail) <= limit:
        return head + tail
    total = len(head) + len(tail) + missing
    # The note's length depends on the number; sizing it with the total keeps the result within the limit.
    keep = limit - len(f"\n\n... [{total} characters truncated] ...\n\n")
    tail_len = min(len(tail), keep - keep // 2) if missing else keep - keep // 2
    if missing:
        kept_tail = tail[len(tail) - tail_len:] if tail_len else ""
        kept_head = head[: keep - len(kept_tail)]
    else:
        kept_head, kept_tail = head[: keep // 2], head[len(head) - tail_len:]
    cut = total - len(kept_head) - len(kept_tail)
    return f"{kept_head}\n\n... [{cut} characters truncated] ...\n\n{kept_tail}"


def clean_output(head: str, tail: str = "", missing: int = 0) -> tuple[str, str]:
    """Leading blank lines and trailing whitespace dropped (as the reference agent)."""
    head = _LEADING_BLANK_LINES.sub("", head)
    if missing:
        return head, tail.rstrip()
    return head.rstrip(), ""


def format_output(buf: OutputBuffer) -> str:
    head, tail, missing = buf.parts()
    head, tail = clean_output(head, tail, missing)
    return cap_output(head, tail, missing)


# Commands whose exit code 1 is not a failure (B.1): no match, files differ, condition false...
_EXIT_ONE_OK = {"grep", "egrep", "fgrep", "rg", "find", "diff", "test", "["}
_OPERATORS = {"|", "||", "&&", ";", "&", "|&", ";;", "(", ")", "\n"}


def last_command_words(command: str) -> list[str]:
    """The words of the last simple command (whose status the shell returns), best effort."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = ""
        tokens = list(lexer)
    except ValueError:
        tokens = command.split()
    words: list[str] = []
    for tok in tokens:
        if tok in _OPERATORS or set(tok) <= set(";&|()"):
            words = []
        else:
            words.append(tok)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return words


def exit_code_is_error(command: str, code: int) -> bool:
    if code == 0:
        return False
    if code != 1:
        return True
    words = last_command_words(command)
    if not words:
        return True
    base = os.path.basename(words[0])
    if base in _EXIT_ONE_OK:
        return False
    if base == "git":
        i = 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in ("-C", "-c") else 1  # global options, two of them with a value
        return not (i < len(words) and words[i] == "diff")
    return True
