"""Stateful fuzz of Read/Edit/Write against a model of the file system (hypothesis RuleBasedStateMachine).

The machine drives the real tools through ``run_tool_use`` in a temp workspace (mode ``acceptEdits``)
and keeps its own model: the expected bytes of every file, and what the model-agent last saw of each
(full or range read, or written by a tool) and whether the file changed behind its back since.
Steps: full and range Reads, Edits (unique match, ``replace_all``, deletions, creating with an empty
``old_string``), Writes (create and overwrite), external modifications (LF, CRLF, UTF-8 BOM and UTF-16LE
files, mtime moved forward as an editor would), external writes within the same mtime tick (the mtime
restored) and external deletions.

Invariant after every step: each file's bytes equal the model's expectation; a tool either did exactly
what the model predicts, or returned an error and the file is byte-for-byte unchanged (the model
predicts which). The test prints the number of steps and the success/error counts per tool.
"""

from __future__ import annotations

import asyncio
import collections
import os
import shutil
import tempfile
import time

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools.edit import EditTool
from desktop_agent.tools.read.tool import ReadTool
from desktop_agent.tools.write import WriteTool

NAMES = ["f0.txt", "f1.txt", "f2.txt", "d/f3.txt"]
ALPHABET = "abcdefghij \né"
TEXT = st.text(alphabet=ALPHABET, max_size=24)
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16le"]
STATS: collections.Counter = collections.Counter()


# ------------------------------------------------------------------ the model's view of bytes


def decode(raw: bytes) -> tuple[str, str]:
    if raw.startswith(b"\xff\xfe"):
        return raw[2:].decode("utf-16-le"), "utf-16le"
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8"), "utf-8-sig"
    return raw.decode("utf-8"), "utf-8"


def encode(text: str, encoding: str) -> bytes:
    if encoding == "utf-16le":
        return b"\xff\xfe" + text.encode("utf-16-le")
    body = text.encode("utf-8")
    return b"\xef\xbb\xbf" + body if encoding == "utf-8-sig" else body


def ending_of(text: str) -> str:
    crlf = text.count("\r\n")
    return "CRLF" if crlf and crlf > text.count("\n") - crlf else "LF"


def lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def render(text_lf: str, encoding: str, ending: str) -> bytes:
    return encode(text_lf.replace("\n", "\r\n") if ending == "CRLF" else text_lf, encoding)


class Seen:
    """What the agent last saw of a file: its text (LF), full view or not, and whether it changed since."""

    def __init__(self, text: str, full: bool):
        self.text = text
        self.full = full
        self.changed_since = False


class FileTools(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="fsm-")
        os.makedirs(os.path.join(self.root, "d"))
        self.ctx = ToolUseContext(cwd=self.root, permission_context=PermissionContext(self.root, mode="acceptEdits"),
                                  tools=[ReadTool(), EditTool(), WriteTool()])
        self.files: dict[str, bytes] = {}
        self.seen: dict[str, Seen] = {}
        for name, raw in (("f0.txt", b"ab\nba\n"), ("f1.txt", b"a b\r\nb a\r\n")):  # LF and CRLF to start
            with open(self.path(name), "wb") as fh:
                fh.write(raw)
            self.files[name] = raw
        self.next_mtime = time.time() + 10
        self.n = 0
        STATS["machines"] += 1

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ---------------------------------------------------------------- helpers
    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def call(self, name: str, inp: dict) -> object:
        self.n += 1
        block = {"type": "tool_use", "id": f"toolu_{self.n}", "name": name, "input": inp}
        out = asyncio.run(run_tool_use(block, self.ctx))
        assert out.block["tool_use_id"] == f"toolu_{self.n}"
        assert out.stage != "internal", out.block
        STATS[(name, "error" if out.is_error else "ok")] += 1
        return out

    def text_of(self, name: str) -> tuple[str, str, str]:
        """(LF text, encoding, line ending) of the model's file."""
        text, enc = decode(self.files[name])
        return lf(text), enc, ending_of(text)

    def expect(self, out: object, ok: bool, why: str) -> None:
        if ok:
            assert not out.is_error, f"expected success ({why}), got {out.block['content']!r}"
        else:
            assert out.is_error, f"expected an error ({why}), got {out.block['content']!r}"

    def view_ok(self, name: str, need_full: bool) -> bool:
        seen = self.seen.get(name)
        if seen is None or (need_full and not seen.full):
            return False
        if not seen.changed_since:
            return True
        return seen.full and seen.text == self.text_of(name)[0]

    # ---------------------------------------------------------------- rules
    @rule(name=st.sampled_from(NAMES), ranged=st.booleans())
    def read(self, name, ranged):
        inp = {"file_path": self.path(name)}
        if ranged:
            inp.update(offset=1, limit=2)
        out = self.call("Read", inp)
        exists = name in self.files
        self.expect(out, exists, "read of an existing file")
        if exists:
            text = self.text_of(name)[0]
            seen = self.seen.get(name)
            unchanged = "file_unchanged" in str(out.block["content"]) or "Wasted call" in str(out.block["content"])
            if not unchanged or seen is None:
                self.seen[name] = Seen(text, full=not ranged)
            # else: a repeated read (same range, same mtime) got the "unchanged" stub: the earlier view stays

    @rule(name=st.sampled_from(NAMES), data=st.data(), replace_all=st.booleans())
    def edit(self, name, data, replace_all):
        exists = name in self.files
        current = self.text_of(name)[0] if exists else ""
        if current and data.draw(st.booleans(), "from file"):
            i = data.draw(st.integers(0, len(current) - 1), "start")
            j = data.draw(st.integers(i, min(len(current), i + 8)), "end")
            old = current[i:j]
        else:
            old = data.draw(TEXT, "old")
        new = data.draw(TEXT, "new")
        out = self.call("Edit", {"file_path": self.path(name), "old_string": old, "new_string": new,
                                 "replace_all": replace_all})
        # Predict (SPEC §3.7 order).
        if old == new:
            return self.expect(out, False, "no change")
        if not exists:
            if old != "":
                return self.expect(out, False, "missing file")
            self.expect(out, True, "create")
            self.files[name] = new.encode("utf-8")
            self.seen[name] = Seen(new, True)
            return
        text, enc, ending = self.text_of(name)
        if old == "":
            if text.strip() != "":
                return self.expect(out, False, "already exists")
            updated = new + text
        else:
            if not self.view_ok(name, need_full=False):
                return self.expect(out, False, "not read / stale")
            count = text.count(old)
            if count == 0:
                return self.expect(out, False, "not found")
            if count > 1 and not replace_all:
                return self.expect(out, False, "several matches")
            n = -1 if replace_all else 1
            if new == "" and not old.endswith("\n") and (old + "\n") in text:
                updated = text.replace(old + "\n", "", n)
            else:
                updated = text.replace(old, new, n)
        self.expect(out, True, "edit")
        self.files[name] = render(updated, enc, ending)
        self.seen[name] = Seen(updated, True)

    @rule(name=st.sampled_from(NAMES), content=TEXT, crlf=st.booleans())
    def write(self, name, content, crlf):
        if crlf:
            content = content.replace("\n", "\r\n")
        out = self.call("Write", {"file_path": self.path(name), "content": content})
        if name not in self.files:
            self.expect(out, True, "create")
            self.files[name] = content.encode("utf-8")
        else:
            if not self.view_ok(name, need_full=True):
                return self.expect(out, False, "not fully read / stale")
            self.expect(out, True, "overwrite")
            _, enc, ending = self.text_of(name)
            self.files[name] = encode(lf(content).replace("\n", "\r\n"), enc) if ending == "CRLF" \
                else encode(content, enc)
        self.seen[name] = Seen(lf(content), True)

    @rule(name=st.sampled_from(NAMES), content=TEXT, crlf=st.booleans(), enc=st.sampled_from(ENCODINGS),
          skip=st.booleans())
    def external_modify(self, name, content, crlf, enc, skip):
        """Someone else (an editor, a formatter) rewrites the file; its mtime moves forward."""
        if skip:  # half as often as the tool steps
            return
        text = content.replace("\n", "\r\n") if crlf else content
        raw = encode(text, enc)
        with open(self.path(name), "wb") as fh:
            fh.write(raw)
        self.next_mtime += 2
        os.utime(self.path(name), (self.next_mtime, self.next_mtime))
        self.files[name] = raw
        if name in self.seen:
            self.seen[name].changed_since = True
        STATS["external"] += 1

    @precondition(lambda self: bool(self.files))
    @rule(data=st.data(), content=TEXT, crlf=st.booleans())
    def external_modify_same_tick(self, data, content, crlf):
        """An external write that leaves the mtime where it was (same tick, coarse timestamps)."""
        if data.draw(st.booleans(), "skip"):
            return
        name = data.draw(st.sampled_from(sorted(self.files)), "name")
        p = self.path(name)
        st_before = os.stat(p)
        _, enc, _ = self.text_of(name)
        raw = encode(content.replace("\n", "\r\n") if crlf else content, enc)
        with open(p, "wb") as fh:
            fh.write(raw)
        os.utime(p, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
        self.files[name] = raw
        seen = self.seen.get(name)
        if seen is not None and seen.full:  # a whole-file view is checked by content; a range view cannot tell
            seen.changed_since = True
        STATS["same_tick"] += 1

    @precondition(lambda self: bool(self.files))
    @rule(data=st.data())
    def external_delete(self, data):
        if data.draw(st.integers(0, 3), "how often") != 0:  # rarer than the other steps
            return
        name = data.draw(st.sampled_from(sorted(self.files)), "name")
        os.unlink(self.path(name))
        del self.files[name]
        if name in self.seen:
            self.seen[name].changed_since = True
        STATS["deleted"] += 1

    # ---------------------------------------------------------------- the invariant
    @invariant()
    def disk_matches_model(self):
        for name in NAMES:
            p = self.path(name)
            if name in self.files:
                with open(p, "rb") as fh:
                    assert fh.read() == self.files[name], name
            else:
                assert not os.path.exists(p), name
        leftovers = [f for _, _, fs in os.walk(self.root) for f in fs if f.endswith(".tmp")]
        assert not leftovers, leftovers


FileTools.TestCase.settings = settings(max_examples=int(os.environ.get("FSM_EXAMPLES", "60")), stateful_step_count=30, deadline=None,
                                       suppress_health_check=list(HealthCheck))


def test_file_tools_state_machine():
    STATS.clear()
    state_machine_test = FileTools.TestCase("runTest")
    state_machine_test.runTest()
    steps = sum(v for k, v in STATS.items() if isinstance(k, tuple))
    print(f"file-tool state machine: {STATS['machines']} runs, {steps} tool calls, "
          f"{STATS['external']} external writes, {STATS['same_tick']} same-tick writes, "
          f"{STATS['deleted']} external deletes; "
          + ", ".join(f"{k[0]} {k[1]}={v}" for k, v in sorted((k, v) for k, v in STATS.items()
                                                                 if isinstance(k, tuple))))
    assert steps > 200
    assert STATS[("Edit", "ok")] > 10 and STATS[("Write", "ok")] > 10
