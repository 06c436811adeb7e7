"""Hooks (SPEC §4.7, App. B §B.5): command hooks from settings files and Python callback hooks.

``run_tool_use`` calls ``ctx.hooks.pre_tool_use(...)`` after validation and before the permission check and
``ctx.hooks.post_tool_use(...)`` after the result block is mapped; the permission flow calls
``permission_request(...)`` (raced against the prompter) and, when a prompter is asked, ``notify_soon`` with
a ``permission_prompt`` Notification (in the background: the question does not wait for the hooks); the
session calls ``user_prompt_submit``, ``session_start``, ``session_end`` and the ``idle_prompt`` Notification;
the loop calls ``stop`` and, after each round of tool calls, ``post_tool_batch``; ``run_tool_use`` calls
``post_tool_use_failure`` instead of ``post_tool_use`` for a call that failed and ``permission_denied`` for a call
denied without a person's answer; the session calls ``user_prompt_expansion`` before a slash command's text replaces
the prompt (``app.commands``); compaction calls ``pre_compact`` (exit 2 or ``decision: block`` stops it) and
``session_start("compact")`` after it. ``SubagentStop`` is accepted in settings but never fires: there are no
subagents.

- Configuration: ``{"<Event>": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "...",
  "timeout": 600, "if": "Bash(git *)"}]}]}``. Matchers: ``*``/``""``/omitted = all; only letters, digits,
  ``_``, ``-``, spaces, ``,`` and ``|`` = exact name list; anything else = unanchored regex.
- Every matching hook runs in parallel (asyncio subprocesses; JSON on stdin; ``CLAUDE_PROJECT_DIR`` set).
- Common input: ``session_id``, ``prompt_id`` (``ctx.extras["prompt_id"]``, a new id per user prompt),
  ``transcript_path``, ``cwd``, ``permission_mode``, ``effort`` (``{"level": "high"}`` unless
  ``ctx.extras["effort"]``), ``hook_event_name``.
- Exit 0: stdout parsed as JSON when it starts with ``{``; exit 2: blocking (stderr is the reason, verbatim; not
  honoured for PermissionRequest); any other exit or a timeout: non-blocking, a notice is recorded.
- PreToolUse precedence with several hooks: deny > defer > ask > allow.
- Callback hooks (``register_callback``) are async Python callables ``fn(input_dict, tool_use_id) -> dict``
  returning the same JSON output; the CLI routes SDK ``hook_callback`` requests through them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, get_args

from pydantic import BaseModel

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionReply, PermissionUpdate
from desktop_agent.core.seams import HookEvent

if TYPE_CHECKING:  # pragma: no cover
    from desktop_agent.permissions.context import PermissionContext

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_EFFORT = "high"  # the hook input's ``effort`` when the session sets none (App. B §B.5)
HOOK_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)
# The reference's Notification texts (``notification_type`` is what matchers match).
PERMISSION_PROMPT_TITLE = "Permission needed"
IDLE_PROMPT_MESSAGE = "Claude is waiting for your input"


def permission_prompt_message(tool_name: str) -> str:
    return f"Claude needs your permission to use {tool_name}"


@dataclass
class PreToolUseOutcome:
    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str | None = None
    updated_input: dict[str, Any] | None = None
    # Exit code 2: the text fed to the model (``PreToolUse:<Tool> hook error: [<cmd>]: <stderr>``).
    blocking_error: str | None = None
    additional_context: str | None = None
    stop: bool = False  # "continue": false
    stop_reason: str | None = None
    deferred: bool = False  # a hook answered "defer" (meaningful only in -p)
    system_messages: list[str] = field(default_factory=list)


@dataclass
class PostToolUseOutcome:
    block_reason: str | None = None
    updated_output: Any = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_messages: list[str] = field(default_factory=list)


@dataclass
class PermissionDeniedOutcome:
    retry: bool = False  # ``hookSpecificOutput.retry``: the model is told it may try the call again
    system_messages: list[str] = field(default_factory=list)


@dataclass
class HookEventOutcome:
    """UserPromptSubmit / Stop / SessionStart / Notification / PreCompact / SessionEnd."""

    block: bool = False
    reason: str | None = None
    additional_context: str | None = None
    stop: bool = False
    stop_reason: str | None = None
    system_messages: list[str] = field(default_factory=list)
    suppress_original: bool = False  # UserPromptExpansion's ``suppressOriginalPrompt``


HookCallback = Callable[[dict[str, Any], str | None], Awaitable[dict[str, Any] | None]]


@dataclass
class HookSpec:
    event: str
    matcher: str | None
    command: str | None = None
    callback: HookCallback | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    if_rule: str | None = None
    name: str = ""


@dataclass
class HookResult:
    spec: HookSpec
    exit_code: int | None  # None: timed out or failed to start
    stdout: str = ""
    stderr: str = ""
    output: dict[str, Any] | None = None  # parsed JSON

    @property
    def label(self) -> str:
        return self.spec.command or self.spec.name or "callback"


def matcher_matches(matcher: str | None, value: str) -> bool:
    if matcher is None or matcher.strip() in ("", "*"):
        return True
    if re.fullmatch(r"[A-Za-z0-9_\- ,|]*", matcher):
        names = [n.strip() for n in re.split(r"[|,]", matcher) if n.strip()]
        return value in names
    try:
        return re.search(matcher, value) is not None
    except re.error:
        return False


def _if_matches(if_rule: str | None, tool_name: str | None, tool_input: dict[str, Any] | None) -> bool:
    if not if_rule:
        return True
    from desktop_agent.permissions.rules import bash_pattern_matches, generic_content_matches, parse_rule

    value = parse_rule(if_rule)
    if tool_name is None or value.tool_name != tool_name:
        return False
    if value.rule_content is None:
        return True
    inp = tool_input or {}
    if tool_name == "Bash":
        return bash_pattern_matches(value.rule_content, str(inp.get("command", "")))
    target = str(inp.get("file_path") or inp.get("path") or inp.get("pattern") or inp.get("url") or "")
    return generic_content_matches(value.rule_content.lstrip("./"), target) or \
        generic_content_matches(value.rule_content, target)


class HookRunner:
    """Runs the hooks configured in settings (and registered callbacks) for each event (``core.context.ToolHooks``
    for the tool-call path)."""

    def __init__(self, config: Any = None, *, session_id: str = "", transcript_path: str = "",
                 env: dict[str, str] | None = None):
        self.specs: list[HookSpec] = []
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.env = env or {}
        self.notices: list[str] = []  # non-blocking hook errors, for the UI
        # ``prompt_id`` when the session did not set ``ctx.extras["prompt_id"]`` (a new id per user prompt).
        self._fallback_prompt_id = str(uuid.uuid4())
        self._background: set[asyncio.Task[Any]] = set()  # hooks fired without waiting (notify_soon)
        if config:
            self.add_config(config)

    # ------------------------------------------------------------------ configuration
    @classmethod
    def from_permission_context(cls, pc: PermissionContext, **kw: Any) -> HookRunner:
        return cls(pc.hooks_config or [], **kw)

    def add_config(self, config: Any) -> None:
        """``config``: a settings ``hooks`` object, or ``HookMatcherConfig`` entries from settings.py."""
        if isinstance(config, dict):
            items = [(event, entry.get("matcher"), entry.get("hooks", []))
                     for event, entries in config.items() if isinstance(entries, list)
                     for entry in entries if isinstance(entry, dict)]
        else:
            items = [(c.event, c.matcher, c.hooks) for c in config]
        for event, matcher, hooks in items:
            for h in hooks or []:
                if not isinstance(h, dict) or h.get("type", "command") != "command" or not h.get("command"):
                    continue
                try:
                    timeout = float(h.get("timeout", DEFAULT_TIMEOUT_S))
                except (TypeError, ValueError):
                    timeout = DEFAULT_TIMEOUT_S
                self.specs.append(HookSpec(event, matcher if isinstance(matcher, str) else None,
                                           command=str(h["command"]), timeout=timeout,
                                           if_rule=h.get("if") if isinstance(h.get("if"), str) else None))

    def register_callback(self, event: str, matcher: str | None, fn: HookCallback, *, timeout: float | None = None,
                          name: str = "") -> None:
        self.specs.append(HookSpec(event, matcher, callback=fn, timeout=timeout or DEFAULT_TIMEOUT_S,
                                   # any callable (a functools.partial has no __name__)
                                   name=name or getattr(fn, "__name__", "callback")))

    def matching(self, event: str, match_value: str | None = None,
                 tool_input: dict[str, Any] | None = None) -> list[HookSpec]:
        out = []
        for s in self.specs:
            if s.event != event:
                continue
            if match_value is not None and not matcher_matches(s.matcher, match_value):
                continue
            if s.if_rule and not _if_matches(s.if_rule, match_value, tool_input):
                continue
            out.append(s)
        return out

    def has_hooks(self, event: str, match_value: str | None = None) -> bool:
        return bool(self.matching(event, match_value))

    # ------------------------------------------------------------------ running
    def _base_input(self, event: str, ctx: ToolUseContext | None) -> dict[str, Any]:
        from desktop_agent.permissions.decide import current_mode

        mode = "default"
        try:
            if ctx is not None and ctx.permission_context is not None:
                mode = current_mode(ctx)
        except Exception:
            pass
        extras = ctx.extras if ctx is not None else {}
        effort = extras.get("effort")
        return {
            "session_id": (ctx.session_id if ctx is not None else "") or self.session_id,
            "prompt_id": str(extras.get("prompt_id") or self._fallback_prompt_id),
            "transcript_path": (ctx.transcript_path if ctx is not None else "") or self.transcript_path,
            "cwd": ctx.cwd if ctx is not None else os.getcwd(),
            "permission_mode": mode,
            "effort": dict(effort) if isinstance(effort, dict) else {"level": DEFAULT_EFFORT},
            "hook_event_name": event,
        }

    async def _run_one(self, spec: HookSpec, payload: dict[str, Any], cwd: str, tool_use_id: str | None) -> HookResult:
        if spec.callback is not None:
            try:
                reply = await asyncio.wait_for(spec.callback(payload, tool_use_id), spec.timeout)
            except asyncio.TimeoutError:
                return HookResult(spec, None, stderr="timed out")
            except Exception as exc:
                return HookResult(spec, 1, stderr=str(exc))
            return HookResult(spec, 0, output=reply if isinstance(reply, dict) else None)
        if spec.command is None:  # add_config and register_callback always set one of the two
            return HookResult(spec, None, stderr="the hook has neither a command nor a callback")
        env = dict(os.environ)
        env.update(self.env)
        env.setdefault("CLAUDE_PROJECT_DIR", cwd)
        try:
            proc = await asyncio.create_subprocess_shell(
                spec.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=cwd if os.path.isdir(cwd) else None, env=env,
                start_new_session=True)
        except OSError as exc:
            return HookResult(spec, None, stderr=str(exc))
        data = json.dumps(payload).encode()
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), spec.timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            try:
                os.killpg(proc.pid, 9)
            except (ProcessLookupError, PermissionError, OSError):
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
            if isinstance(exc, asyncio.CancelledError):
                raise
            return HookResult(spec, None, stderr=f"timed out after {spec.timeout:g}s")
        stdout = out.decode("utf-8", "replace")
        result = HookResult(spec, proc.returncode, stdout, err.decode("utf-8", "replace"))
        if proc.returncode == 0 and stdout.lstrip().startswith("{"):
            try:
                parsed = json.loads(stdout)
                result.output = parsed if isinstance(parsed, dict) else None
            except ValueError:
                self.notices.append(f"{spec.event} hook [{spec.command}] printed invalid JSON")
        return result

    async def _run_all(self, event: str, payload: dict[str, Any], ctx: ToolUseContext | None,
                       match_value: str | None = None, tool_input: dict[str, Any] | None = None,
                       tool_use_id: str | None = None) -> list[HookResult]:
        specs = self.matching(event, match_value, tool_input)
        if not specs:
            return []
        cwd = (ctx.cwd if ctx is not None else None) or os.getcwd()
        results = await asyncio.gather(*(self._run_one(s, payload, cwd, tool_use_id) for s in specs))
        for r in results:
            if r.exit_code is None:
                self.notices.append(f"{event} hook [{r.label}] did not complete: {r.stderr.strip()}")
            elif r.exit_code not in (0, 2):
                self.notices.append(f"{event} hook [{r.label}] failed with exit code {r.exit_code}: "
                                    f"{r.stderr.strip()}")
        return list(results)

    # ------------------------------------------------------------------ events
    async def pre_tool_use(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str,
                           ctx: ToolUseContext | None) -> PreToolUseOutcome:
        payload = {**self._base_input("PreToolUse", ctx), "tool_name": tool_name, "tool_input": tool_input,
                   "tool_use_id": tool_use_id}
        results = await self._run_all("PreToolUse", payload, ctx, tool_name, tool_input, tool_use_id)
        outcome = PreToolUseOutcome()
        rank = {"deny": 4, "defer": 3, "ask": 2, "allow": 1}
        best, best_reason = 0, None
        contexts: list[str] = []
        for r in results:
            if r.exit_code == 2:
                if outcome.blocking_error is None:
                    # Quoted verbatim, trailing newline included (App. A).
                    outcome.blocking_error = f"PreToolUse:{tool_name} hook error: [{r.label}]: " \
                                             f"{r.stderr or 'No stderr output'}"
                continue
            out = r.output or {}
            if r.exit_code != 0 or not out:
                continue
            _universal(out, outcome)
            hso = _object(out.get("hookSpecificOutput"))
            decision = hso.get("permissionDecision")
            reason = hso.get("permissionDecisionReason")
            if decision is None and out.get("decision") in ("approve", "block"):  # legacy
                decision = "allow" if out["decision"] == "approve" else "deny"
                reason = out.get("reason")
            if decision in rank and rank[decision] > best:
                best, best_reason = rank[decision], reason
            if isinstance(hso.get("updatedInput"), dict):
                outcome.updated_input = hso["updatedInput"]
            if isinstance(hso.get("additionalContext"), str) and hso["additionalContext"]:
                contexts.append(hso["additionalContext"])
        name = {4: "deny", 3: "defer", 2: "ask", 1: "allow"}.get(best)
        if name == "defer":
            outcome.deferred = True
        elif name is not None:
            outcome.decision = name  # type: ignore[assignment]
            outcome.reason = best_reason if isinstance(best_reason, str) else None
        if outcome.decision == "deny" and not outcome.reason:
            outcome.reason = f"PreToolUse hook denied this {tool_name} call."
        if contexts:
            outcome.additional_context = "\n".join(contexts)
        return outcome

    async def post_tool_use(self, tool_name: str, tool_input: dict[str, Any], tool_response: Any, tool_use_id: str,
                            ctx: ToolUseContext | None) -> PostToolUseOutcome:
        payload = {**self._base_input("PostToolUse", ctx), "tool_name": tool_name, "tool_input": tool_input,
                   "tool_response": _jsonable(tool_response), "tool_use_id": tool_use_id}
        results = await self._run_all("PostToolUse", payload, ctx, tool_name, tool_input, tool_use_id)
        outcome = PostToolUseOutcome()
        reasons: list[str] = []
        contexts: list[str] = []
        for r in results:
            if r.exit_code == 2:
                reasons.append(r.stderr.strip() or f"[{r.label}] blocked")
                continue
            out = r.output or {}
            if r.exit_code != 0 or not out:
                continue
            _universal(out, outcome)
            if out.get("decision") == "block":
                reasons.append(str(out.get("reason") or f"[{r.label}] blocked"))
            hso = _object(out.get("hookSpecificOutput"))
            updated = hso.get("updatedToolOutput", out.get("updatedToolOutput"))
            if updated is None:
                updated = hso.get("updatedMCPToolOutput")
            if updated is not None:
                outcome.updated_output = updated
            if isinstance(hso.get("additionalContext"), str) and hso["additionalContext"]:
                contexts.append(hso["additionalContext"])
        if reasons:
            outcome.block_reason = "\n".join(reasons)
        if contexts:
            outcome.additional_context = "\n".join(contexts)
        return outcome

    async def post_tool_use_failure(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str, error: str,
                                    ctx: ToolUseContext | None, *, is_interrupt: bool = False,
                                    duration_ms: int | None = None) -> PostToolUseOutcome:
        """PostToolUseFailure (matcher: the tool name): instead of PostToolUse when the call failed. Exit 2 /
        ``decision: block`` give ``block_reason`` (fed to the model after the error), ``additionalContext`` too;
        ``continue: false`` stops the loop."""
        payload = {**self._base_input("PostToolUseFailure", ctx), "tool_name": tool_name, "tool_input": tool_input,
                   "tool_use_id": tool_use_id, "error": error, "is_interrupt": is_interrupt}
        if duration_ms is not None:
            payload["duration_ms"] = duration_ms
        results = await self._run_all("PostToolUseFailure", payload, ctx, tool_name, tool_input, tool_use_id)
        outcome = PostToolUseOutcome()
        reasons: list[str] = []
        contexts: list[str] = []
        for r in results:
            if r.exit_code == 2:
                reasons.append(r.stderr.strip() or f"[{r.label}] blocked")
                continue
            out = r.output or {}
            if r.exit_code != 0 or not out:
                continue
            _universal(out, outcome)
            if out.get("decision") == "block":
                reasons.append(str(out.get("reason") or f"[{r.label}] blocked"))
            hso = _object(out.get("hookSpecificOutput"))
            if isinstance(hso.get("additionalContext"), str) and hso["additionalContext"]:
                contexts.append(hso["additionalContext"])
        if reasons:
            outcome.block_reason = "\n".join(reasons)
        if contexts:
            outcome.additional_context = "\n".join(contexts)
        return outcome

    async def post_tool_batch(self, tool_calls: list[dict[str, Any]], ctx: ToolUseContext | None) -> HookEventOutcome:
        """PostToolBatch (no matcher): once a round's calls all have their results, before the next request.
        ``tool_calls``: ``[{tool_name, tool_input, tool_use_id, tool_response}]`` in call order. Exit 2,
        ``decision: block`` or ``continue: false`` end the turn (``stop``, with the reason); ``additionalContext``
        goes to the model with the results."""
        payload = {**self._base_input("PostToolBatch", ctx), "tool_calls": _jsonable(tool_calls)}
        outcome = self._event_outcome(await self._run_all("PostToolBatch", payload, ctx))
        if outcome.block and not outcome.stop:
            outcome.stop = True
            outcome.stop_reason = outcome.reason or "Execution stopped by PostToolBatch hook"
        return outcome

    async def permission_denied(self, tool_name: str, tool_input: dict[str, Any], tool_use_id: str, reason: str,
                                ctx: ToolUseContext | None) -> PermissionDeniedOutcome:
        """PermissionDenied (matcher: the tool name): a call was denied without a person's answer (a deny rule,
        the mode, or an ask nobody could answer). It cannot undo the denial; ``retry: true`` tells the model it
        may try the call again."""
        payload = {**self._base_input("PermissionDenied", ctx), "tool_name": tool_name, "tool_input": tool_input,
                   "tool_use_id": tool_use_id, "reason": reason}
        outcome = PermissionDeniedOutcome()
        for r in await self._run_all("PermissionDenied", payload, ctx, tool_name, tool_input, tool_use_id):
            out = r.output or {}
            if r.exit_code != 0 or not out:
                continue
            _universal(out, outcome)
            if _object(out.get("hookSpecificOutput")).get("retry") is True:
                outcome.retry = True
        return outcome

    async def user_prompt_expansion(self, expansion_type: str, command_name: str, command_args: str,
                                    command_source: str | None, prompt: str,
                                    ctx: ToolUseContext | None) -> HookEventOutcome:
        """UserPromptExpansion (matcher: the command name): before a slash command's text replaces the prompt.
        Exit 2 / ``decision: block`` block it (``block``, ``reason``; ``suppressOriginalPrompt`` in
        ``suppress_original``), ``continue: false`` stops it; stdout or ``additionalContext`` is context."""
        payload = {**self._base_input("UserPromptExpansion", ctx), "expansion_type": expansion_type,
                   "command_name": command_name, "command_args": command_args, "prompt": prompt}
        if command_source:
            payload["command_source"] = command_source
        results = await self._run_all("UserPromptExpansion", payload, ctx, command_name)
        outcome = self._event_outcome(results, stdout_is_context=True)
        outcome.suppress_original = any(
            _object((r.output or {}).get("hookSpecificOutput")).get("suppressOriginalPrompt") is True for r in results)
        return outcome

    async def permission_request(self, tool_name: str, tool_input: dict[str, Any],
                                 suggestions: list[PermissionUpdate], ctx: ToolUseContext | None,
                                 tool_use_id: str | None = None) -> PermissionReply | None:
        """PermissionRequest hooks: a ``PermissionReply`` when one decides, else None (exit 2 is not honoured)."""
        wire = [s.to_wire() for s in suggestions or []]
        payload = {**self._base_input("PermissionRequest", ctx), "tool_name": tool_name, "tool_input": tool_input,
                   "permission_suggestions": wire}
        if tool_use_id:
            payload["tool_use_id"] = tool_use_id
        results = await self._run_all("PermissionRequest", payload, ctx, tool_name, tool_input, tool_use_id)
        allow: PermissionReply | None = None
        for r in results:
            out = r.output or {}
            if r.exit_code != 0 or not out:
                continue
            hso = _object(out.get("hookSpecificOutput"))
            decision = hso.get("decision", out.get("decision"))
            if not isinstance(decision, dict):
                continue
            behavior = decision.get("behavior")
            updates = []
            for u in decision.get("updatedPermissions") or []:
                try:
                    updates.append(PermissionUpdate.model_validate(u))
                except Exception:
                    pass
            if behavior == "deny":
                return PermissionReply(behavior="deny", message=decision.get("message") or
                                       f"Permission to use {tool_name} was denied by a PermissionRequest hook.",
                                       interrupt=bool(decision.get("interrupt")))
            if behavior == "allow" and allow is None:
                ui = decision.get("updatedInput")
                allow = PermissionReply(behavior="allow", updated_input=ui if isinstance(ui, dict) else None,
                                        updated_permissions=updates)
        return allow

    async def user_prompt_submit(self, prompt: str, ctx: ToolUseContext | None) -> HookEventOutcome:
        payload = {**self._base_input("UserPromptSubmit", ctx), "prompt": prompt}
        return self._event_outcome(await self._run_all("UserPromptSubmit", payload, ctx), stdout_is_context=True)

    async def stop(self, ctx: ToolUseContext | None, stop_hook_active: bool = False) -> HookEventOutcome:
        payload = {**self._base_input("Stop", ctx), "stop_hook_active": stop_hook_active}
        return self._event_outcome(await self._run_all("Stop", payload, ctx))

    async def session_start(self, source: str, ctx: ToolUseContext | None) -> HookEventOutcome:
        payload = {**self._base_input("SessionStart", ctx), "source": source}
        return self._event_outcome(await self._run_all("SessionStart", payload, ctx, source),
                                   stdout_is_context=True)

    async def notification(self, message: str, ctx: ToolUseContext | None, notification_type: str = "",
                           title: str | None = None) -> HookEventOutcome:
        """Notification (matcher: ``notification_type``); exit 2 blocks nothing."""
        payload = {**self._base_input("Notification", ctx), "message": message}
        if title:
            payload["title"] = title
        if notification_type:
            payload["notification_type"] = notification_type
        return self._event_outcome(await self._run_all("Notification", payload, ctx, notification_type or None))

    def notify_soon(self, message: str, ctx: ToolUseContext | None, notification_type: str,
                    title: str | None = None) -> None:
        """Notification hooks in the background (a waiting dialog must not wait for them); ``drain`` awaits them.
        Nothing is started when no Notification hook matches."""
        if not self.matching("Notification", notification_type):
            return
        task = asyncio.ensure_future(self.notification(message, ctx, notification_type, title))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self, timeout: float | None = None) -> None:
        """Wait for the hooks ``notify_soon`` started (at session end, so none is killed half-way)."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout)

    async def pre_compact(self, trigger: str, custom_instructions: str | None,
                          ctx: ToolUseContext | None) -> HookEventOutcome:
        """PreCompact (matcher: ``manual``/``auto``): exit 2, ``decision: block`` or ``continue: false`` blocks
        the compaction (``block``; ``reason`` is the hook's stderr or reason)."""
        payload = {**self._base_input("PreCompact", ctx), "trigger": trigger,
                   "custom_instructions": custom_instructions or ""}
        outcome = self._event_outcome(await self._run_all("PreCompact", payload, ctx, trigger))
        if outcome.stop:
            outcome.block = True
            outcome.reason = outcome.reason or outcome.stop_reason
        return outcome

    async def session_end(self, reason: str, ctx: ToolUseContext | None) -> HookEventOutcome:
        """SessionEnd (matcher: ``reason``: ``clear``, ``logout``, ``prompt_input_exit`` or ``other``); it cannot
        block the end."""
        payload = {**self._base_input("SessionEnd", ctx), "reason": reason}
        return self._event_outcome(await self._run_all("SessionEnd", payload, ctx, reason))

    def _event_outcome(self, results: list[HookResult], stdout_is_context: bool = False) -> HookEventOutcome:
        outcome = HookEventOutcome()
        reasons: list[str] = []
        contexts: list[str] = []
        for r in results:
            if r.exit_code == 2:
                outcome.block = True
                reasons.append(r.stderr.strip())
                continue
            if r.exit_code != 0:
                continue
            out = r.output
            if out is None:
                if stdout_is_context and r.stdout.strip():
                    contexts.append(r.stdout.strip())
                continue
            _universal(out, outcome)
            if out.get("decision") == "block":
                outcome.block = True
                reasons.append(str(out.get("reason") or ""))
            hso = _object(out.get("hookSpecificOutput"))
            if isinstance(hso.get("additionalContext"), str) and hso["additionalContext"]:
                contexts.append(hso["additionalContext"])
        if reasons:
            outcome.reason = "\n".join(x for x in reasons if x) or None
        if contexts:
            outcome.additional_context = "\n".join(contexts)
        return outcome


def _object(value: Any) -> dict[str, Any]:
    """A JSON object field of a hook's output, or ``{}`` when it is missing or not an object."""
    return value if isinstance(value, dict) else {}


def _universal(out: dict[str, Any], outcome: Any) -> None:
    if out.get("continue") is False:
        outcome.stop = True
        outcome.stop_reason = out.get("stopReason") or outcome.stop_reason
    msg = out.get("systemMessage")
    if isinstance(msg, str) and msg:
        outcome.system_messages.append(msg)


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, BaseModel):
            try:
                return value.model_dump(mode="json")
            except Exception:
                pass
        return str(value)
