"""Compaction (SPEC §5.5): summarise the conversation so far and continue from the summary.

- Threshold: the effective context window (the model's window, lowered by
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``, minus min(max output tokens, 20 000) kept for the summary)
  minus ``AUTOCOMPACT_BUFFER_TOKENS`` (13 000). Tokens are estimated from the messages after the last
  boundary (the last reported API usage plus ~4 characters a token for what came after it, never
  less than the character estimate of everything).
- ``compact_conversation``: one model request through the session's own client with a
  summarisation prompt; the result is ``[boundary, summary, *attachments]``. The boundary
  (``system``/``compact_boundary``, ``parentUuid: null``, ``logicalParentUuid``) and the summary
  (``isCompactSummary``) are appended to the transcript; up to 5 recently read files are regenerated
  from ``read_file_state`` as ``isEphemeral`` attachments, which the store never writes.
- Hooks (App. B §B.5), when ``hooks`` is given: ``PreCompact`` (``trigger`` manual/auto, ``custom_instructions``)
  runs before the summary request, and exit 2, ``decision: block`` or ``continue: false`` stops the compaction
  (``CompactBlocked``, no request); after it, ``SessionStart`` with ``source: compact`` runs and its context
  joins the attachments (the reference's ``hookResults``).
- ``AutoCompactState``: after 3 consecutive failures the session stops trying (a blocked auto-compaction
  counts as one, so a hook that always blocks is asked three times, not before every request).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from desktop_agent.core.context import ReadFileState, ToolUseContext
from desktop_agent.core.messages import normalize_for_api, system_entry, user_entry
from desktop_agent.core.seams import HookEvent
from desktop_agent.model.client import ModelClient, ModelRequest
from desktop_agent.session.store import is_compact_boundary

AUTOCOMPACT_BUFFER_TOKENS = 13_000
MAX_SUMMARY_RESERVE_TOKENS = 20_000
MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3
DEFAULT_CONTEXT_WINDOW = 200_000
ONE_MILLION_WINDOW = 1_000_000
MAX_ATTACHED_FILES = 5
ATTACHMENT_TOKENS_PER_FILE = 5_000
ATTACHMENT_TOKENS_TOTAL = 50_000
CHARS_PER_TOKEN = 4

SUMMARY_SYSTEM_PROMPT = "You are a helpful AI assistant tasked with summarizing conversations."

COMPACT_PROMPT = """Your task is to create a detailed summary of the conversation so far. This summary will replace the conversation history, so it must keep everything needed to continue the work without losing context.

Do NOT call any tools. Respond with text only.

Before the summary, think inside <analysis> tags about the conversation in order: the user's explicit requests and intents, your approach, key decisions, file names, code snippets, function signatures and edits, errors you met and how they were fixed, and the user's feedback.

Then write the summary inside <summary> tags with these sections:
1. Primary Request and Intent
2. Key Technical Concepts
3. Files and Code Sections (with the important snippets)
4. Errors and Fixes
5. Problem Solving
6. All User Messages (every user message that is not a tool result)
7. Pending Tasks
8. Current Work (precisely what was being worked on just before this summary)
9. Optional Next Step (only if it directly follows the user's most recent request)
"""


def context_window_for_model(model: str | None) -> int:
    name = (model or "").lower()
    if "[1m]" in name or name.endswith("-1m"):
        return ONE_MILLION_WINDOW
    return DEFAULT_CONTEXT_WINDOW


def max_output_tokens_for_model(model: str | None) -> int:
    name = (model or "").lower()
    if "opus-4" in name and "4-5" not in name and "4-6" not in name:
        return 32_000
    if "3-5" in name or "3-haiku" in name:
        return 8_192
    return 64_000


def effective_context_window(model: str | None) -> int:
    window = context_window_for_model(model)
    override = os.environ.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    if override:
        try:
            window = min(window, int(override))
        except ValueError:
            pass
    return window - min(max_output_tokens_for_model(model), MAX_SUMMARY_RESERVE_TOKENS)


def auto_compact_threshold(model: str | None) -> int:
    return effective_context_window(model) - AUTOCOMPACT_BUFFER_TOKENS


def auto_compact_enabled() -> bool:
    return not (os.environ.get("DISABLE_AUTO_COMPACT") or os.environ.get("DISABLE_COMPACT"))


def messages_after_boundary(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """From the last compact boundary (kept) on — what the model sees (§5.4 step 1)."""
    for i in range(len(entries) - 1, -1, -1):
        if is_compact_boundary(entries[i]):
            return entries[i:]
    return list(entries)


def rough_tokens(obj: Any) -> int:
    if isinstance(obj, str):
        return (len(obj) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
    return (len(json.dumps(obj, ensure_ascii=False, default=str)) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _usage_tokens(usage: dict[str, Any]) -> int:
    return sum(int(usage.get(k) or 0) for k in (
        "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"))


def _entry_tokens(entry: dict[str, Any], cache: dict[str, int] | None) -> int:
    uid = entry.get("uuid")
    if cache is not None and uid and uid in cache:
        return cache[uid]
    n = rough_tokens((entry.get("message") or {}).get("content", ""))
    if cache is not None and uid:
        cache[uid] = n
    return n


def estimate_tokens(entries: list[dict[str, Any]], cache: dict[str, int] | None = None) -> int:
    """Estimated context size of the messages the next request would carry (``cache``: uuid → tokens,
    so a check before every request stays cheap)."""
    msgs = [m for m in messages_after_boundary(entries) if m.get("type") in ("user", "assistant")]
    sizes = [_entry_tokens(m, cache) for m in msgs]
    char_estimate = sum(sizes)
    for i in range(len(msgs) - 1, -1, -1):
        usage = (msgs[i].get("message") or {}).get("usage") if msgs[i].get("type") == "assistant" else None
        if isinstance(usage, dict) and _usage_tokens(usage) > 0:
            return max(_usage_tokens(usage) + sum(sizes[i + 1:]), char_estimate)
    return char_estimate


@dataclass
class AutoCompactState:
    consecutive_failures: int = 0
    attempts: int = 0
    last_error: str | None = None
    token_cache: dict[str, int] = field(default_factory=dict)

    @property
    def gave_up(self) -> bool:
        return self.consecutive_failures >= MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES


def should_auto_compact(entries: list[dict[str, Any]], model: str | None, state: AutoCompactState,
                        enabled: bool = True, extra_tokens: int = 0) -> bool:
    if not enabled or not auto_compact_enabled() or state.gave_up:
        return False
    if not any(m.get("type") in ("user", "assistant") and not m.get("isEphemeral") and not m.get("isCompactSummary")
               for m in messages_after_boundary(entries)):
        return False  # nothing new since the last compaction
    return estimate_tokens(entries, state.token_cache) + extra_tokens > auto_compact_threshold(model)


class HookVerdict(Protocol):
    """A hook event's outcome as compaction reads it (``permissions.hooks.HookEventOutcome``)."""

    @property
    def block(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def additional_context(self) -> str | None: ...


class CompactHooks(Protocol):
    """What compaction asks of the session's hook runner (``permissions.hooks.HookRunner``)."""

    def has_hooks(self, event: HookEvent, match_value: str | None = None) -> bool: ...
    async def pre_compact(self, trigger: str, custom_instructions: str | None, ctx: Any) -> HookVerdict: ...
    async def session_start(self, source: str, ctx: Any) -> HookVerdict: ...


class CompactError(Exception):
    pass


class CompactBlocked(CompactError):
    """A PreCompact hook blocked the compaction."""


@dataclass
class CompactResult:
    boundary: dict[str, Any]
    summary: dict[str, Any]
    attachments: list[dict[str, Any]] = field(default_factory=list)
    pre_tokens: int = 0
    summary_text: str = ""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [self.boundary, self.summary, *self.attachments]


def format_summary(raw: str) -> str:
    """Drop the ``<analysis>`` scratchpad; unwrap ``<summary>``."""
    text = re.sub(r"<analysis>.*?</analysis>", "", raw, flags=re.S)
    match = re.search(r"<summary>(.*?)</summary>", text, flags=re.S)
    if match:
        text = "Summary:\n" + match.group(1).strip()
    return re.sub(r"\n{3,}", "\n\n", text).strip()


CONTINUE_INSTRUCTION = (
    "Please continue the conversation from where we left it off without asking the user any further questions. "
    "Continue with the last task that you were asked to work on."
)


def summary_message_text(summary: str, transcript_path: str, continuation: bool = False) -> str:
    text = (
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\n"
        f"{summary}\n\n"
        "If you need specific details from before compaction (like exact code snippets, error messages, or content "
        f"you generated), read the full transcript at: {transcript_path}"
    )
    return f"{text}\n{CONTINUE_INSTRUCTION}" if continuation else text


def _numbered(text: str) -> str:
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines = lines[:-1]
    return "\n".join(f"{i}\t{line.rstrip(chr(13))}" for i, line in enumerate(lines, 1))


def file_attachments(read_file_state: ReadFileState | None, exclude: set[str] | None = None) -> list[dict[str, Any]]:
    """Up to 5 most recently read files, re-read from disk, within the token budgets. Never persisted."""
    if read_file_state is None:
        return []
    items = list(read_file_state.items())
    out: list[dict[str, Any]] = []
    budget = ATTACHMENT_TOKENS_TOTAL
    for path, _entry in reversed(items):  # LRU order: most recent last
        if len(out) >= MAX_ATTACHED_FILES:
            break
        if exclude and path in exclude:
            continue
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as fh:
                content = fh.read(ATTACHMENT_TOKENS_PER_FILE * CHARS_PER_TOKEN + 1)
        except OSError:
            continue
        truncated = len(content) > ATTACHMENT_TOKENS_PER_FILE * CHARS_PER_TOKEN
        content = content[:ATTACHMENT_TOKENS_PER_FILE * CHARS_PER_TOKEN]
        body = _numbered(content)
        cost = rough_tokens(body)
        if cost > budget:
            break
        budget -= cost
        note = "\n(truncated: read the file for the rest)" if truncated else ""
        text = (f"<system-reminder>\nThis file was read before the conversation was summarized. "
                f"Its current contents ({path}):\n{body}{note}\n</system-reminder>")
        out.append(user_entry([{"type": "text", "text": text}], isMeta=True, isEphemeral=True,
                               attachment={"type": "file", "filename": path}))
    return out


async def summarize(client: ModelClient, model: str, entries: list[dict[str, Any]], *,
                    tools: list[dict[str, Any]] | None = None, custom_instructions: str | None = None,
                    max_tokens: int = MAX_SUMMARY_RESERVE_TOKENS) -> str:
    """One summarisation request through ``client``; returns the formatted summary text."""
    prompt = COMPACT_PROMPT
    if custom_instructions:
        prompt += f"\nAdditional instructions from the user:\n{custom_instructions}\n"
    history = [m for m in messages_after_boundary(entries) if not m.get("isEphemeral")]
    messages = normalize_for_api(history + [user_entry(prompt)])
    request = ModelRequest(model=model, messages=messages,
                           system=[{"type": "text", "text": SUMMARY_SYSTEM_PROMPT}],
                           tools=list(tools or []), max_tokens=max_tokens,
                           metadata={"query_source": "compact"})
    parts: dict[int, str] = {}
    try:
        async for event in client.stream(request):
            kind = event.get("type")
            if kind == "content_block_start":
                block = event.get("content_block") or {}
                if block.get("type") == "text":
                    parts[event.get("index", 0)] = block.get("text", "") or ""
            elif kind == "content_block_delta":
                delta = event.get("delta") or {}
                if delta.get("type") == "text_delta":
                    idx = event.get("index", 0)
                    parts[idx] = parts.get(idx, "") + delta.get("text", "")
            elif kind == "error":
                raise CompactError(str(event.get("error")))
    except CompactError:
        raise
    except Exception as exc:
        raise CompactError(f"Error during compaction: {exc}") from exc
    raw = "".join(parts[i] for i in sorted(parts))
    if not raw.strip():
        raise CompactError("Failed to generate conversation summary - response did not contain valid text content")
    return format_summary(raw)


async def compact_conversation(client: ModelClient, model: str, entries: list[dict[str, Any]], *,
                               transcript_path: str, read_file_state: ReadFileState | None = None,
                               tools: list[dict[str, Any]] | None = None, trigger: str = "auto",
                               custom_instructions: str | None = None, continuation: bool = False,
                               hooks: CompactHooks | None = None, ctx: ToolUseContext | None = None) -> CompactResult:
    """Summarise ``entries``. ``continuation``: compaction in the middle of a turn, so the summary tells the
    model to carry on with the task (the request after it has no new user input). ``hooks``/``ctx``: the
    session's HookRunner and context, for PreCompact and SessionStart(compact)."""
    if not [m for m in entries if m.get("type") in ("user", "assistant")]:
        raise CompactError("Not enough messages to compact.")
    if hooks is not None and hooks.has_hooks("PreCompact", trigger):
        verdict = await hooks.pre_compact(trigger, custom_instructions, ctx)
        if verdict.block:
            raise CompactBlocked(f"PreCompact hook blocked the compaction: {verdict.reason or 'no reason given'}")
    pre_tokens = estimate_tokens(entries)
    summary = await summarize(client, model, entries, tools=tools, custom_instructions=custom_instructions)
    last_uuid = next((m.get("uuid") for m in reversed(entries) if m.get("uuid") and not m.get("isEphemeral")), None)
    boundary = system_entry("compact_boundary", "Conversation compacted", parentUuid=None, logicalParentUuid=last_uuid,
                            level="info", compactMetadata={"trigger": trigger, "preTokens": pre_tokens})
    summary_entry = user_entry(summary_message_text(summary, transcript_path, continuation), isCompactSummary=True,
                               isVisibleInTranscriptOnly=True)
    attachments = file_attachments(read_file_state)
    if hooks is not None and hooks.has_hooks("SessionStart", "compact"):
        started = await hooks.session_start("compact", ctx)
        if started.additional_context:
            text = f"<system-reminder>\nSessionStart hook additional context: {started.additional_context}\n" \
                   "</system-reminder>"
            attachments.append(user_entry([{"type": "text", "text": text}], isMeta=True, isEphemeral=True,
                                          attachment={"type": "hook_additional_context", "hookName": "SessionStart"}))
    return CompactResult(boundary=boundary, summary=summary_entry, attachments=attachments, pre_tokens=pre_tokens,
                         summary_text=summary)
