"""Faults on the file tools: a file changed while its permission dialog is open, a disk that is full.

- Edit/Write asks (mode ``default``); while the dialog is open an editor rewrites the file; the user then
  allows. The call must fail with exactly ``File has been unexpectedly modified. Read it again before
  attempting to write it.`` (wrapped in ``<tool_use_error>``) and the editor's content is kept.
- The same race when the editor's write lands in the same mtime tick as the Read (a coarse-timestamp file
  system, or a fast formatter): the content comparison must still catch it.
- Disk full: ``OSError(ENOSPC)`` injected into the atomic writer, and a real 64 KB tmpfs where we can mount
  one (root); the result is a clear error, the old content is intact and no temp file is left.
Each test prints the figure it checks (result text, bytes on disk, leftover temp files).
"""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import time

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.util import fileio
from desktop_agent.tools.registry import all_builtin_tools

UNEXPECTED = ("<tool_use_error>File has been unexpectedly modified. Read it again before attempting to write it."
              "</tool_use_error>")
ORIGINAL = "export const value = 1\nexport const other = 2\n"
EXTERNAL = "export const value = 1\nexport const other = 2\n// saved by the editor\n"


class EditorWhileAsking:
    """A prompter whose dialog stays open while 'the editor' rewrites the file, then the user allows."""

    waits = True

    def __init__(self, path: str, same_tick: bool = False):
        self.path = path
        self.same_tick = same_tick
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> PermissionReply:
        self.requests.append(request)
        st = os.stat(self.path)
        await asyncio.sleep(0.02)
        with open(self.path, "w") as fh:
            fh.write(EXTERNAL)
        if self.same_tick:  # the write landed within the same mtime tick as the Read
            os.utime(self.path, ns=(st.st_atime_ns, st.st_mtime_ns))
        await asyncio.sleep(0.02)
        return PermissionReply(behavior="allow")


def _ctx(ws: str, prompter=None, mode: str = "default") -> ToolUseContext:
    return ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode=mode), prompter=prompter,
                          tools=list(all_builtin_tools()))


def _call(ctx, name, inp, id="t1"):
    return asyncio.run(run_tool_use({"type": "tool_use", "id": id, "name": name, "input": inp}, ctx))


def _tmp_leftovers(directory: str) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith(".tmp")]


@pytest.mark.parametrize("same_tick", [False, True], ids=["later_tick", "same_tick"])
@pytest.mark.parametrize("tool", ["Edit", "Write"])
def test_file_changed_while_permission_dialog_open(tmp_path, tool, same_tick):
    ws = str(tmp_path)
    path = os.path.join(ws, "app.ts")
    with open(path, "w") as fh:
        fh.write(ORIGINAL)
    prompter = EditorWhileAsking(path, same_tick=same_tick)
    ctx = _ctx(ws, prompter)
    assert not _call(ctx, "Read", {"file_path": path}, "r1").is_error
    if tool == "Edit":
        inp = {"file_path": path, "old_string": "value = 1", "new_string": "value = 2"}
    else:
        inp = {"file_path": path, "content": "export const value = 2\n"}
    out = _call(ctx, tool, inp, "e1")
    with open(path) as fh:
        on_disk = fh.read()
    print(f"{tool} ({'same' if same_tick else 'later'} mtime tick): dialogs {len(prompter.requests)}, "
          f"result {out.block['content']!r}, external change kept: {on_disk == EXTERNAL}")
    assert len(prompter.requests) == 1
    assert out.is_error and out.block["content"] == UNEXPECTED
    assert on_disk == EXTERNAL
    assert _tmp_leftovers(ws) == []


@pytest.mark.parametrize("mtime", ["same_tick", "older"])
def test_same_tick_external_change_blocks_stale_write_without_dialog(tmp_path, mtime):
    """Read, an editor saves within the same mtime tick (or restores an older mtime, like ``cp -p``), then
    Write: the model never saw that save."""
    ws = str(tmp_path)
    path = os.path.join(ws, "notes.md")
    with open(path, "w") as fh:
        fh.write(ORIGINAL)
    ctx = _ctx(ws, mode="acceptEdits")
    assert not _call(ctx, "Read", {"file_path": path}, "r1").is_error
    st = os.stat(path)
    with open(path, "w") as fh:
        fh.write(EXTERNAL)
    older = st.st_mtime_ns - (10_000_000_000 if mtime == "older" else 0)
    os.utime(path, ns=(st.st_atime_ns, older))
    out = _call(ctx, "Write", {"file_path": path, "content": "replaced\n"}, "w1")
    with open(path) as fh:
        on_disk = fh.read()
    print(f"Write after an external save ({mtime} mtime): {out.block['content']!r}; kept: {on_disk == EXTERNAL}")
    assert out.is_error and "modified since read" in out.block["content"]
    assert on_disk == EXTERNAL
    # The model re-reads as told: it gets the new text (not the "file unchanged" stub), then can write.
    again = _call(ctx, "Read", {"file_path": path}, "r2")
    assert "saved by the editor" in again.block["content"], again.block
    assert not _call(ctx, "Write", {"file_path": path, "content": "replaced\n"}, "w2").is_error


# ------------------------------------------------------------------ disk full


@pytest.mark.parametrize("tool", ["Edit", "Write"])
def test_disk_full_injected_enospc(tmp_path, monkeypatch, tool):
    ws = str(tmp_path)
    path = os.path.join(ws, "app.ts")
    with open(path, "w") as fh:
        fh.write(ORIGINAL)
    os.chmod(path, 0o640)
    ctx = _ctx(ws, mode="acceptEdits")
    assert not _call(ctx, "Read", {"file_path": path}, "r1").is_error

    real_fsync = os.fsync
    hits = []

    def full_fsync(fd):
        hits.append(fd)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", full_fsync)
    if tool == "Edit":
        inp = {"file_path": path, "old_string": "value = 1", "new_string": "value = 2"}
    else:
        inp = {"file_path": path, "content": "export const value = 2\n"}
    out = _call(ctx, tool, inp, "e1")
    monkeypatch.setattr(fileio.os, "fsync", real_fsync)
    with open(path) as fh:
        on_disk = fh.read()
    print(f"{tool} with ENOSPC injected: {out.block['content']!r}; old content intact: {on_disk == ORIGINAL}; "
          f"temp files left: {_tmp_leftovers(ws)}")
    assert hits, "the injected fault was reached"
    assert out.is_error and out.block["tool_use_id"] == "e1"
    assert "No space left on device" in out.block["content"]
    assert on_disk == ORIGINAL
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert _tmp_leftovers(ws) == []
    # The model's view still matches the file: a retry after space is freed works.
    retry = _call(ctx, tool, inp, "e2")
    assert not retry.is_error, retry.block


@pytest.fixture
def small_tmpfs(tmp_path):
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the injected-ENOSPC test covers this case)")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode(errors='replace').strip()}")
    try:
        yield str(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("tool", ["Edit", "Write"])
def test_disk_full_real_tmpfs(small_tmpfs, tool):
    ws = small_tmpfs
    path = os.path.join(ws, "app.ts")
    original = "line\n" * 2000  # 10 KB
    with open(path, "w") as fh:
        fh.write(original)
    # Fill the rest of the 64 KB file system.
    with open(os.path.join(ws, "filler.bin"), "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 1024)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    ctx = _ctx(ws, mode="acceptEdits")
    assert not _call(ctx, "Read", {"file_path": path, "limit": 5}, "r0").is_error
    assert not _call(ctx, "Read", {"file_path": path}, "r1").is_error
    if tool == "Edit":
        inp = {"file_path": path, "old_string": "line\n", "new_string": "a longer line\n", "replace_all": True}
    else:
        inp = {"file_path": path, "content": "x" * 40_000}
    t0 = time.perf_counter()
    out = _call(ctx, tool, inp, "e1")
    with open(path) as fh:
        on_disk = fh.read()
    print(f"{tool} on a full 64 KB tmpfs: {out.block['content']!r} in {(time.perf_counter() - t0) * 1000:.0f} ms; "
          f"old content intact: {on_disk == original}; temp files left: {_tmp_leftovers(ws)}")
    assert out.is_error and "No space left on device" in out.block["content"]
    assert on_disk == original
    assert _tmp_leftovers(ws) == []


def test_filling_an_emptied_file_after_an_older_view(tmp_path):
    """Regression (found by the stateful fuzz test): the model wrote a file, someone emptied it, then Edit with
    ``old_string`` "" fills it. Validation accepts this (check 5); the call used to fail with "unexpectedly
    modified" because the model's older view no longer matched."""
    ws = str(tmp_path)
    path = os.path.join(ws, "f.txt")
    ctx = _ctx(ws, mode="acceptEdits")
    assert not _call(ctx, "Write", {"file_path": path, "content": "a"}, "w1").is_error
    with open(path, "w"):
        pass
    later = time.time() + 5
    os.utime(path, (later, later))
    out = _call(ctx, "Edit", {"file_path": path, "old_string": "", "new_string": "filled\n"}, "e1")
    with open(path) as fh:
        on_disk = fh.read()
    print(f"Edit filling an emptied file: {out.block['content']!r}; on disk {on_disk!r}")
    assert not out.is_error, out.block
    assert on_disk == "filled\n"
