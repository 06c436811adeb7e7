"""fileio (decoding, line endings, atomic writes, binary sniffing) and patch (structured hunks)."""

from __future__ import annotations

import difflib
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop_agent.util import fileio
from desktop_agent.util.diff import format_unified, structured_patch

# ---------------------------------------------------------------- reading


@pytest.mark.parametrize("raw,text,encoding,ending", [
    (b"a\nb\n", "a\nb\n", "utf-8", "LF"),
    (b"a\r\nb\r\n", "a\nb\n", "utf-8", "CRLF"),
    (b"a\r\nb\nc\n", "a\nb\nc\n", "utf-8", "LF"),  # mostly LF
    (b"\xef\xbb\xbfx\r\n", "x\n", "utf-8-sig", "CRLF"),
    (b"\xff\xfe" + "h\u00e9\r\n".encode("utf-16-le"), "h\u00e9\n", "utf-16le", "CRLF"),
    (b"", "", "utf-8", "LF"),
    (b"old\rmac", "old\rmac", "utf-8", "LF"),  # a lone CR is content
])
def test_read_text_file(tmp_path, raw, text, encoding, ending):
    p = tmp_path / "f"
    p.write_bytes(raw)
    assert fileio.read_text_file(str(p)) == (text, encoding, ending)


@pytest.mark.parametrize("raw", [
    b"plain\n", b"a\r\nb\r\n", b"\xef\xbb\xbfbom\r\n", b"\xff\xfe" + "utf16\r\nx".encode("utf-16-le"),
    b"bad \xff\xfe utf8 \xc3\n", "\u00fcnic\u00f6de \U0001f600\n".encode(),
])
def test_round_trip_is_byte_exact(tmp_path, raw):
    p = tmp_path / "f"
    p.write_bytes(raw)
    text, enc, ending = fileio.read_text_file(str(p))
    fileio.write_text_atomic(str(p), text, enc, ending)
    assert p.read_bytes() == raw


def test_to_display_replaces_undecodable_bytes():
    text, _ = fileio.decode_bytes(b"caf\xe9")
    assert fileio.to_display(text) == "caf\ufffd"
    assert fileio.to_display("fine") == "fine"


@pytest.mark.parametrize("size,expected", [
    (0, "0 bytes"), (1023, "1023 bytes"), (1024, "1KB"), (330035, "322.3KB"), (262144, "256KB"),
    (1536 * 1024, "1.5MB"), (1024 ** 3, "1GB"),
])
def test_format_file_size(size, expected):
    assert fileio.format_file_size(size) == expected


@pytest.mark.parametrize("head,binary", [
    (b"hello world\n", False),
    (b"\x00\x01\x02", True),
    (b"\xff\xfe" + "text".encode("utf-16-le"), False),
    ("caf\u00e9 ".encode() * 10 + "\u00e9".encode()[:1], False),  # cut multi-byte char at the end
    ("caf\u00e9\n".encode("latin-1"), False),
    (bytes(range(1, 32)) * 4, True),
    (b"", False),
])
def test_looks_binary(head, binary):
    assert fileio.looks_binary(head) is binary


# ---------------------------------------------------------------- atomic writes


def test_write_keeps_mode_and_leaves_no_temp_files(tmp_path):
    p = tmp_path / "script.sh"
    p.write_text("old")
    p.chmod(0o741)
    fileio.write_text_atomic(str(p), "new\n", "utf-8", "CRLF")
    assert p.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o741
    assert os.listdir(tmp_path) == ["script.sh"]


def test_failed_write_leaves_original_and_no_temp(tmp_path, monkeypatch):
    p = tmp_path / "f.txt"
    p.write_text("original")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(fileio.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        fileio.write_text_atomic(str(p), "new", "utf-8", "LF")
    assert p.read_text() == "original"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_a_write_removes_the_temps_killed_writers_left(tmp_path):
    """A writer SIGKILLed between its temp file and the rename leaves ``.<name>.<pid>.<rand>.tmp``;
    the next write of that file removes it once that pid no longer runs — and nothing else."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        target = tmp_path / "app.py"
        target.write_text("old\n")
        stale = tmp_path / f".app.py.{dead_pid}.x1y2z3.tmp"
        busy = tmp_path / f".app.py.{live.pid}.a1b2c3.tmp"  # another writer, still running
        unrelated = [tmp_path / f".other.py.{dead_pid}.q.tmp", tmp_path / ".app.py.notapid.tmp",
                     tmp_path / f".app.py.{dead_pid}.keep"]
        for f in (stale, busy, *unrelated):
            f.write_text("partial")
        fileio.write_bytes_atomic(str(target), b"new\n")
        assert target.read_text() == "new\n"
        assert not stale.exists()
        assert busy.exists() and all(f.exists() for f in unrelated)
    finally:
        live.kill()
        live.wait()


def test_write_through_symlink(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("a")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    fileio.write_text_atomic(str(link), "b")
    assert link.is_symlink() and target.read_text() == "b"


def test_path_lock_is_per_path(tmp_path):
    a1 = fileio.path_lock(str(tmp_path / "a"))
    a2 = fileio.path_lock(str(tmp_path / "x" / ".." / "a"))
    b = fileio.path_lock(str(tmp_path / "b"))
    assert a1 is a2 and a1 is not b


# ---------------------------------------------------------------- structured patch


def apply_hunks(old: str, hunks: list[dict]) -> str:
    """Apply hunks to ``old`` (no fuzz): checks context and removed lines, returns the new text's lines."""
    old_lines = old.split("\n")
    out: list[str] = []
    pos = 0
    for h in hunks:
        start = h["oldStart"] - 1 if h["oldLines"] else h["oldStart"] - 1
        out.extend(old_lines[pos:start])
        pos = start
        n_old = n_new = 0
        for line in h["lines"]:
            tag, body = line[0], line[1:]
            if tag in " -":
                assert old_lines[pos] == body, (pos, old_lines[pos], body)
                pos += 1
                n_old += 1
            if tag in " +":
                out.append(body)
                n_new += 1
        assert (n_old, n_new) == (h["oldLines"], h["newLines"])
    out.extend(old_lines[pos:])
    return "\n".join(out)


def test_simple_hunk_with_context():
    old = "".join(f"line {i}\n" for i in range(1, 21))
    new = old.replace("line 10\n", "line ten\n")
    assert structured_patch(old, new) == [{
        "oldStart": 7, "oldLines": 7, "newStart": 7, "newLines": 7,
        "lines": [" line 7", " line 8", " line 9", "-line 10", "+line ten", " line 11", " line 12", " line 13"],
    }]


def test_close_changes_merge_far_changes_split():
    old = "".join(f"{i}\n" for i in range(1, 41))
    near = old.replace("10\n", "X\n").replace("16\n", "Y\n")  # 5 equal lines between: one hunk
    assert len(structured_patch(old, near)) == 1
    far = old.replace("10\n", "X\n").replace("18\n", "Y\n")  # 7 equal lines between: two hunks
    hunks = structured_patch(old, far)
    assert [(h["oldStart"], h["oldLines"]) for h in hunks] == [(7, 7), (15, 7)]


def test_missing_final_newline_shows_as_change():
    assert structured_patch("a\nb", "a\nb\n") == [
        {"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2, "lines": [" a", "-b", "+b"]}]


def test_identical_and_empty():
    assert structured_patch("same\n", "same\n") == []
    assert structured_patch("", "x\n") == [{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 1,
                                            "lines": ["+x"]}]
    assert structured_patch("x\n", "") == [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 0,
                                            "lines": ["-x"]}]


def test_matches_difflib_on_full_lines():
    old = "".join(f"row {i}\n" for i in range(200))
    new = old.replace("row 50\n", "").replace("row 120\n", "row 120\nextra\n").replace("row 199\n", "last\n")
    ours = format_unified(structured_patch(old, new))
    theirs = "\n".join(
        line.rstrip("\n") for line in difflib.unified_diff(old.splitlines(True), new.splitlines(True), n=3)
    ).split("\n", 2)[2]  # drop the ---/+++ header
    assert ours == theirs


def test_large_file_single_edit_is_exact():
    old = "".join(f"def f{i}(): return {i}\n" for i in range(100_000))
    new = old.replace("def f50000(): return 50000\n", "def f50000(): return -1\n")
    hunks = structured_patch(old, new)
    assert hunks == [{"oldStart": 49_998, "oldLines": 7, "newStart": 49_998, "newLines": 7, "lines": [
        " def f49997(): return 49997", " def f49998(): return 49998", " def f49999(): return 49999",
        "-def f50000(): return 50000", "+def f50000(): return -1",
        " def f50001(): return 50001", " def f50002(): return 50002", " def f50003(): return 50003"]}]
    assert apply_hunks(old, hunks) == new


def test_change_at_start_and_end_of_large_file():
    old = "".join(f"{i}\n" for i in range(10_000))
    new = "first\n" + old[2:] + "tail\n"
    hunks = structured_patch(old, new)
    assert [(h["oldStart"], h["oldLines"], h["newStart"], h["newLines"]) for h in hunks] == [
        (1, 4, 1, 4), (9998, 3, 9998, 4)]
    assert apply_hunks(old, hunks) == new


lines_strategy = st.lists(st.sampled_from(["a", "b", "c", "", "d d", "'q'"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(lines_strategy, lines_strategy, st.booleans(), st.booleans())
def test_hunks_apply_back(a_lines, b_lines, a_nl, b_nl):
    old = "\n".join(a_lines) + ("\n" if a_nl and a_lines else "")
    new = "\n".join(b_lines) + ("\n" if b_nl and b_lines else "")
    hunks = structured_patch(old, new)
    if old == new:
        assert hunks == []
        return
    assert hunks, (old, new)
    for h in hunks:
        assert all(line[:1] in (" ", "-", "+") for line in h["lines"])
    # Compare as line lists: our hunks do not encode the final-newline marker itself.
    rebuilt = apply_hunks(old, hunks)
    assert rebuilt.rstrip("\n") == new.rstrip("\n") or rebuilt == new


@settings(max_examples=200, deadline=None)
@given(lines_strategy, st.integers(0, 200), st.integers(0, 20), st.text(alphabet="ab\n'", max_size=8))
def test_splice_hints_give_the_same_patch(a_lines, at, cut_len, insert):
    old = "\n".join(a_lines)
    at = min(at, len(old))
    end = min(len(old), at + cut_len)
    new = old[:at] + insert + old[end:]
    assert structured_patch(old, new, same_prefix=at, same_suffix=len(old) - end) == structured_patch(old, new)


@settings(max_examples=150, deadline=None)
@given(st.integers(120, 400), st.lists(st.tuples(st.sampled_from(["del", "ins", "mod", "dup"]),
                                                st.integers(0, 10**6)), max_size=40), st.booleans())
def test_anchored_diff_of_larger_files_applies_back(n, edits, final_newline):
    """Large enough to take the patience-anchored path, with repeated lines mixed in."""
    lines = [f"line {i}" if i % 7 else "}" for i in range(n)]
    new = list(lines)
    for kind, r in edits:
        if not new:
            break
        k = r % len(new)
        if kind == "del":
            del new[k]
        elif kind == "ins":
            new.insert(k, f"inserted {r}")
        elif kind == "mod":
            new[k] += " changed"
        else:
            new.insert(k, new[(k * 7) % len(new)])
    old_text = "\n".join(lines) + "\n"
    new_text = "\n".join(new) + ("\n" if final_newline and new else "")
    hunks = structured_patch(old_text, new_text)
    rebuilt = apply_hunks(old_text, hunks)
    assert rebuilt.rstrip("\n") == new_text.rstrip("\n")


def test_scattered_changes_in_a_large_file_are_fast():
    import random
    import time

    rng = random.Random(7)
    old = [f"line {i} {rng.randint(0, 10**6)}" for i in range(20_000)]
    new = list(old)
    for _ in range(1000):
        j = rng.randrange(len(new))
        new[j] += " changed"
    a, b = "\n".join(old) + "\n", "\n".join(new) + "\n"
    t0 = time.perf_counter()
    hunks = structured_patch(a, b)
    elapsed = time.perf_counter() - t0
    assert apply_hunks(a, hunks) == b
    assert elapsed < 2.0, elapsed  # ~0.1 s anchored; plain SequenceMatcher is far slower on this shape
