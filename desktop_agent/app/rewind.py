"""Rewind for a session: its checkpoints (``session.checkpoints``) taken at the right moments, and restores to a user
message, answered the way the ``rewind_files`` control request (SPEC App. D.4) and the window's "Rewind…" need them.

``SessionCheckpoints(cwd, enabled=…)`` owns the project's ``CheckpointStore`` for one session (opened on first use,
off the event loop). ``before_turn(message_id, wait=False)`` starts the snapshot of the folder just before a user
message is answered (named by the message's ``uuid``) beside the turn's first model request; ``before_tool`` (the
engine, before any tool call runs), the turn's end and every restore wait for it (``settle``).
``after_tool(name, tool_use_id)`` snapshots after a tool that may have written (the engine's ``ToolCheckpoints``
seam), naming the snapshot by the call when it changed something: the changes panel's Revert of that one change
(``revert_change``) restores its file to the snapshot before the call, three-way over the one after it. Every store operation runs on a worker thread (``util.threads.in_thread``); a failure of
the store is logged and never fails the turn or the tool call.

``rewind_files(message_id, dry_run)`` is the ``RewindFilesResult`` object (``canRewind``, ``error``,
``filesChanged`` as absolute paths, ``insertions``, ``deletions``, ``skippedLinks`` on a real rewind); ``plan`` /
``restore`` / ``undo`` are the window's dry run, restore and "Undo restore". A restore (and its undo) is a fact of
the session: ``recorder`` (the session's ``record``) writes it to the transcript as a ``change-revert`` line with
``action: restore`` (``restore_record``), and the next prompt tells the model which files went back to which message
and that it must read them again (``session.changes``) — after a ``--resume`` too. Without a recorder the note waits
in memory (``take_note``).
``markers()`` gives, per user message, the files and +/- lines the turn it started changed (the conversation's
checkpoint markers).

``checkpointing_enabled(settings)``: on when ``CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING`` is ``true`` (the
TypeScript SDK's ``enableFileCheckpointing``) or our setting ``file_checkpointing`` says so.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from desktop_agent.util.threads import in_thread

if TYPE_CHECKING:
    from desktop_agent.session.checkpoints import CheckpointStore, RestorePlan, RestoreResult

log = logging.getLogger(__name__)

ENV_FLAG = "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"
NOT_ENABLED = "File checkpointing is not enabled"
NO_CHECKPOINT = "No file checkpoint found for this message"


def checkpointing_enabled(setting: bool | None, default: bool = False) -> bool:
    """The SDK's environment flag, else our setting, else the front end's default (the window: on; the CLI: off,
    as the reference)."""
    if os.environ.get(ENV_FLAG, "").strip().lower() in ("1", "true", "yes"):
        return True
    return default if setting is None else bool(setting)


@dataclass
class TurnMarker:
    """What the turn a user message started changed in the folder."""

    message_id: str
    files: list[str]
    insertions: int
    deletions: int


class SessionCheckpoints:
    """The checkpoints of one session's folder (see the module docstring)."""

    def __init__(self, cwd: str, *, enabled: bool, include: tuple[str, ...] = (),
                 max_file_bytes: int | None = None) -> None:
        self.cwd = os.path.abspath(cwd)
        self.enabled = enabled
        self._include = include
        self._max = max_file_bytes
        self._store: CheckpointStore | None = None
        self._open_lock = threading.Lock()
        self._notes: list[str] = []
        self._notes_lock = threading.Lock()
        self.last_error: str | None = None
        self.order: list[str] = []  # the user message ids checkpointed in this session, in order
        # where a restore is recorded (the session's ``record``: the transcript and the note of the next prompt);
        # called on a worker thread
        self.recorder: Any = None
        self._pending: asyncio.Future[Any] | None = None  # the turn's first snapshot, while it runs

    # ------------------------------------------------------------------ the store

    def store(self) -> CheckpointStore:
        """The project's store (blocking: call from a worker thread)."""
        with self._open_lock:
            if self._store is None:
                # deferred (a cost, not a cycle): the store (git plumbing, the folder watch) only where checkpointing
                # is on; a -p run without it never imports session.checkpoints
                from desktop_agent.session.checkpoints import CheckpointStore

                kw: dict[str, Any] = {"include": self._include}
                if self._max is not None:
                    kw["max_file_bytes"] = self._max
                self._store = CheckpointStore.open(self.cwd, **kw)
            return self._store

    async def aclose(self) -> None:
        """The session ends: the turn's snapshot finished, then the store's folder watch let go (on a worker
        thread: it waits for any snapshot still running)."""
        await self.settle()
        store = self._store
        if store is not None:
            await self._run("close", store.close)

    async def _run(self, what: str, fn: Any) -> Any:
        try:
            return await in_thread(fn)
        except Exception as exc:  # the store's failure never fails the turn or the call
            self.last_error = f"{what}: {exc}"
            log.warning("checkpoint %s failed: %s", what, exc)
            return None

    # ------------------------------------------------------------------ snapshots (the seams)

    async def before_turn(self, message_id: str, *, wait: bool = True) -> None:
        """The snapshot just before the user message ``message_id`` is answered. ``wait=False`` starts it and
        returns: it runs beside the turn's first model request, and ``before_tool`` / ``settle`` wait for it (a
        tool must not change the folder before it, a restore needs its ref)."""
        if not self.enabled:
            return
        self.order.append(message_id)
        task = asyncio.ensure_future(self._run(
            "snapshot before the turn", lambda: self.store().snapshot("turn", label=message_id,
                                                                      message_id=message_id)))
        self._pending = task
        if wait:
            await self.settle()

    async def settle(self) -> None:
        """Wait for a snapshot ``before_turn`` started (its failure is logged by ``_run``); at once when none is."""
        task = self._pending
        if task is not None:
            # shielded: a cancelled turn still leaves the snapshot whole, and the next wait sees it done
            await asyncio.shield(task)
            if self._pending is task:
                self._pending = None

    async def before_tool(self) -> None:
        await self.settle()

    async def after_tool(self, tool_name: str, tool_use_id: str, paths: list[str] | None = None) -> None:
        """The snapshot after a call that may have changed the folder; ``paths``: the files it wrote, when it names
        them (Write, Edit): only those are looked at (``CheckpointStore.snapshot(only=…)``)."""
        if not self.enabled:
            return
        rels = [self._rel(p) for p in paths] if paths else None
        only = [str(r) for r in rels] if rels and all(r is not None for r in rels) else None
        await self._run(f"snapshot after {tool_name}",
                        lambda: self.store().snapshot("tool", label=f"{tool_name} {tool_use_id}",
                                                      tool_use_id=tool_use_id, only=only))

    # ------------------------------------------------------------------ restores

    def _target(self, message_id: str) -> str:
        commit = self.store().checkpoint_for(message_id)
        if commit is None:
            from desktop_agent.session.checkpoints import CheckpointError  # deferred (a cost): see store()

            raise CheckpointError(NO_CHECKPOINT)
        return commit

    async def plan(self, message_id: str) -> RestorePlan:
        """The dry run of a restore to just before ``message_id`` (raises ``CheckpointError``)."""
        await self.settle()
        return await in_thread(lambda: self.store().plan(self._target(message_id)))

    async def restore(self, message_id: str) -> RestoreResult:
        await self.settle()
        result: RestoreResult = await in_thread(lambda: self._restore_recorded(
            lambda store: store.restore(self._target(message_id)), "restored", message_id))
        return result

    async def undo(self, restore_id: str, *, strict: bool = False, told: bool = True) -> RestoreResult:
        """Undo restore ``restore_id``; ``told``: recorded for the model (a change's Redo is told by its own
        ``change-revert`` record instead)."""
        await self.settle()

        def run(store: CheckpointStore) -> RestoreResult:
            return store.undo(restore_id, strict=strict)

        if not told:
            return await in_thread(lambda: run(self.store()))
        return await in_thread(lambda: self._restore_recorded(run, "undone", None))

    async def revert_change(self, tool_use_id: str, paths: list[str]) -> RestoreResult | None:
        """The changes panel's Revert of one change through the restore (``CheckpointStore.revert_change``):
        its paths (absolute or relative to the folder) back to before that call. None: no snapshot of that call
        (checkpointing off, a call from before the store knew it, a path outside the folder). Told by the panel's
        own record."""
        if not self.enabled:
            return None
        rels = [self._rel(p) for p in paths]
        if any(r is None for r in rels):  # outside the folder: the store does not hold it
            return None
        await self.settle()
        return await in_thread(lambda: self.store().revert_change(tool_use_id, [str(r) for r in rels]))

    def _rel(self, path: str) -> str | None:
        full = os.path.normpath(path if os.path.isabs(path) else os.path.join(self.cwd, path))
        real_cwd = os.path.realpath(self.cwd)
        for root in {self.cwd, real_cwd}:
            rel = os.path.relpath(full, root)
            if not rel.startswith("..") and rel != ".":
                return rel.replace(os.sep, "/")
        return None

    def _restore_recorded(self, run: Any, outcome: str, message_id: str | None) -> RestoreResult:
        """A restore (worker thread) and, once it wrote something, its record: the transcript's ``change-revert``
        line (``action: restore``, ``session.changes``) through ``recorder``, so the model is told with the next
        prompt, after a resume too; without a recorder the note waits in memory (``take_note``)."""
        result: RestoreResult = run(self.store())
        if not result.files:
            return result
        record = restore_record(result, outcome, message_id, self.cwd)
        recorder = self.recorder
        if recorder is not None:
            try:
                recorder(record)
                return result
            except Exception as exc:  # the files are restored either way; the note still goes with the next prompt
                log.warning("could not record the restore: %s", exc)
        from desktop_agent.session.changes import describe

        with self._notes_lock:
            self._notes.append(describe(record, self.cwd))
        return result

    def take_note(self) -> str | None:
        """The note of the restores no recorder took (the next user message starts with it), once."""
        with self._notes_lock:
            notes, self._notes = self._notes, []
        return "\n".join(notes) if notes else None

    async def rewind_files(self, message_id: str, dry_run: bool) -> dict[str, Any]:
        """The ``rewind_files`` response (``RewindFilesResult``)."""
        if not self.enabled:
            return {"canRewind": False, "error": NOT_ENABLED}
        from desktop_agent.session.checkpoints import CheckpointError  # deferred (a cost): see store()

        try:
            if dry_run:
                plan = await self.plan(message_id)
                return {"canRewind": True, "filesChanged": [self._abs(f.path) for f in plan.files],
                        "insertions": plan.insertions, "deletions": plan.deletions}
            result = await self.restore(message_id)
        except CheckpointError as exc:
            return {"canRewind": False, "error": str(exc)}
        except Exception as exc:  # the store's own failure: said, never a hang or a crash of the run
            log.warning("rewind_files failed: %s", exc)
            return {"canRewind": False, "error": f"Could not restore the files: {exc}"}
        return {"canRewind": True, "filesChanged": [self._abs(f.path) for f in result.files],
                "insertions": result.insertions, "deletions": result.deletions,
                "skippedLinks": result.skipped_links, "merged": [f.path for f in result.files if f.action == "merge"]}

    def _abs(self, rel: str) -> str:
        return os.path.join(self.cwd, *rel.split("/"))

    # ------------------------------------------------------------------ markers

    def markers(self, message_ids: list[str]) -> list[TurnMarker]:
        """Per user message (blocking): what its turn changed, from its checkpoint to the next one's (or the tip)."""
        store = self.store()
        commits = [(m, store.checkpoint_for(m)) for m in message_ids]
        known = [(m, c) for m, c in commits if c is not None]
        tip = store.tip()
        out = []
        for i, (m, c) in enumerate(known):
            nxt = known[i + 1][1] if i + 1 < len(known) else tip
            if nxt is None or nxt == c:
                out.append(TurnMarker(m, [], 0, 0))
                continue
            files, ins, dels = store.diff_stats(c, nxt)
            out.append(TurnMarker(m, files, ins, dels))
        return out


def restore_record(result: RestoreResult, outcome: str, message_id: str | None, cwd: str) -> dict[str, Any]:
    """The transcript's record of a restore (``restored``: to just before ``message_id``) or of its undo
    (``undone``): a ``change-revert`` line with ``action: restore`` (``session.changes.describe`` words it)."""
    from desktop_agent.core.messages import change_record_entry

    return change_record_entry("restore", outcome=outcome, toolUseId=result.restore_id, filePath=cwd,
                               added=result.insertions, removed=result.deletions, restoreId=result.restore_id,
                               messageId=message_id, files=[f.path for f in result.files],
                               conflicts=list(result.conflicts), skippedLinks=result.skipped_links)


def fork_before(transcript_path: str, cwd: str, message_id: str) -> str:
    """A new session whose transcript is this one's up to (not including) the user message ``message_id``: the
    conversation rewound to just before it, the original left as it is. Returns the new session id (resume it).
    Blocking: call from a worker thread."""
    import json

    from desktop_agent.core.messages import new_uuid
    from desktop_agent.session.store import transcript_path_for
    from desktop_agent.util.fileio import write_bytes_atomic

    new_id = new_uuid()
    out: list[bytes] = []
    found = False
    with open(transcript_path, "rb") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(obj, dict):
                continue
            if obj.get("type") == "user" and obj.get("uuid") == message_id:
                found = True
                break
            if "sessionId" in obj:
                obj["sessionId"] = new_id
            out.append(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")
    if not found:
        from desktop_agent.session.checkpoints import CheckpointError  # deferred (a cost): see store()

        raise CheckpointError("That message is not in this conversation")
    dst = transcript_path_for(cwd, new_id)
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(str(dst), b"".join(out))
    return new_id


def plan_view(plan: RestorePlan) -> dict[str, Any]:
    """A dry run as the window shows it (plain data: the window reaches the engine only through the client)."""
    return {"files": [{"path": f.path, "action": f.action, "insertions": f.insertions, "deletions": f.deletions}
                      for f in plan.files],
            "conflicts": list(plan.conflicts), "insertions": plan.insertions, "deletions": plan.deletions}


def result_view(result: RestoreResult) -> dict[str, Any]:
    return {"restoreId": result.restore_id, "files": [f.path for f in result.files],
            "conflicts": list(result.conflicts), "insertions": result.insertions, "deletions": result.deletions,
            "skippedLinks": result.skipped_links, "merged": [f.path for f in result.files if f.action == "merge"]}


__all__ = ["ENV_FLAG", "fork_before", "plan_view", "result_view", "NOT_ENABLED", "NO_CHECKPOINT", "SessionCheckpoints",
           "RewindableSession", "TurnMarker", "checkpointing_enabled", "restore_record"]


class RewindableSession(Protocol):
    """What ``answer_window_rewind`` reads of a session (``app.session.AgentSession`` has it)."""

    checkpoints: SessionCheckpoints
    last_prompt_uuid: str | None
    cwd: str

    @property
    def transcript_path(self) -> str: ...


async def answer_window_rewind(session: RewindableSession, action: str, message_id: str | None, restore_id: str | None,
                               files: bool, conversation: bool, tool_use_id: str | None = None,
                               paths: list[str] | None = None) -> dict[str, Any]:
    """The host's answer to ``desktop_agent_rewind`` (the window's Rewind over any transport): plain data only.
    Raises ``ValueError`` with the refusal (the host answers it as an error ``control_response``)."""
    from desktop_agent.util.threads import in_thread

    checkpoints: SessionCheckpoints = session.checkpoints
    await checkpoints.settle()  # a turn's first snapshot, still running beside its model request
    if action == "marker":
        mid = message_id or session.last_prompt_uuid
        if not checkpoints.enabled or not mid:
            return {}
        markers = await in_thread(lambda: checkpoints.markers([mid]))
        if not markers:
            return {}
        m = markers[0]
        return {"messageId": m.message_id, "files": m.files, "insertions": m.insertions, "deletions": m.deletions}
    if action == "revert_change":  # the changes panel's Revert: {} when the store holds no snapshot of that call
        if not tool_use_id or not paths:
            raise ValueError("No change to revert")
        reverted = await checkpoints.revert_change(tool_use_id, paths)
        return {} if reverted is None else result_view(reverted)
    if not checkpoints.enabled:
        raise ValueError("File checkpointing is not enabled")
    if action == "plan":
        if not message_id:
            raise ValueError("No message to rewind to")
        return plan_view(await checkpoints.plan(message_id))
    if action == "restore":
        if not message_id:
            raise ValueError("No message to rewind to")
        out: dict[str, Any] = {}
        if files:
            out = result_view(await checkpoints.restore(message_id))
        if conversation:
            path, cwd = session.transcript_path, session.cwd
            out["forkSessionId"] = await in_thread(lambda: fork_before(path, cwd, message_id))
        return out
    if action == "undo":
        if not restore_id:
            raise ValueError("No restore to undo")
        return result_view(await checkpoints.undo(restore_id))
    if action == "redo_change":  # the panel's Redo: the revert's restore undone, refused if the file moved since
        if not restore_id:
            raise ValueError("No revert to redo")
        return result_view(await checkpoints.undo(restore_id, strict=True, told=False))
    raise ValueError(f"Unknown rewind action: {action}")
