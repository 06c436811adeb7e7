"""Fuzz of the permission layer: random rule strings, random settings files, random requests.

Properties (hypothesis, bounded examples):
- ``parse_rule`` and loading any settings JSON never raise; bad input becomes a warning;
- every decision of ``decide`` (the real Read/Edit/Write/Grep/Glob/Bash tools) is
  ``allow``, ``deny`` or ``ask``, and a deny or ask carries a non-empty message;
- a deny rule that matches an input is never overridden by an allow rule for the same input, in any mode
  (bypassPermissions included) and whatever the rule sources.
Each test prints the number of examples it ran and the decision counts.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.gateway import decide_for
from desktop_agent.permissions.rules import parse_rule
from desktop_agent.permissions.settings import SettingsError, load_settings
from desktop_agent.core.permission import PermissionRule
from desktop_agent.tools.registry import all_builtin_tools

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
TOOLS = {t.name: t for t in all_builtin_tools()}
MODES = ["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
SOURCES = ["userSettings", "projectSettings", "localSettings", "cliArg", "session", "policySettings", "flagSettings"]
WORDS = ["ls", "cat", "rm", "git", "npm", "echo", "python", "sed", "curl", "find", "make", "grep"]

TOOL_NAMES = st.sampled_from(["Read", "Edit", "Write", "Grep", "Glob", "Bash", "WebFetch", "mcp__srv", "mcp__srv__*",
                              "Bash ", "", "*"])
NASTY = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
RULE_CONTENT = st.one_of(
    NASTY,
    st.sampled_from(["*", "**", "/**", "//tmp/**", "~/x", "./a/../b", ":*", "git push:*", "rm -rf /", "src/**",
                     "*.py", "(", ")", "\\(", "a(b)c", "domain:example.com", "file_path:*.py", "\x00", "\u200b"]),
)
RULE_STRINGS = st.one_of(
    NASTY,
    st.builds(lambda t, c: f"{t}({c})", TOOL_NAMES, RULE_CONTENT),
    st.builds(lambda t, c: f"{t}({c}", TOOL_NAMES, RULE_CONTENT),
    TOOL_NAMES,
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | NASTY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NASTY, inner, max_size=4),
    max_leaves=12,
)
PERMISSION_KEYS = st.sampled_from(["allow", "deny", "ask", "additionalDirectories", "defaultMode",
                                   "disableBypassPermissionsMode"])
SETTINGS_DOC = st.one_of(
    JSON,
    st.fixed_dictionaries({"permissions": st.dictionaries(PERMISSION_KEYS, st.one_of(
        st.lists(RULE_STRINGS, max_size=5), JSON, st.sampled_from(MODES + ["manual", "nope"])), max_size=5)}),
    st.fixed_dictionaries({"hooks": JSON, "permissions": JSON}),
)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _an_object(path: str) -> bool:
    """The file holds a JSON object (or nothing but whitespace, an empty source), as ``json.loads`` reads it."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read().removeprefix("\ufeff")
    if not text.strip():
        return True
    try:
        return isinstance(json.loads(text, parse_constant=_no_constant), dict)
    except ValueError:
        return False


def _run(coro):
    return asyncio.run(coro)


def _decide(ctx: ToolUseContext, name: str, raw: dict):
    tool = TOOLS[name]
    parsed = tool.input_model.model_validate(raw)
    return decide_for(tool, parsed, ctx)


def _check_decision(d) -> None:
    assert d.behavior in ("allow", "deny", "ask"), d
    if d.behavior in ("deny", "ask"):
        assert isinstance(d.message, str) and d.message.strip(), d


@FUZZ
@given(text=RULE_STRINGS)
def test_fuzz_parse_rule_never_raises(text):
    value = parse_rule(text)
    assert isinstance(value.tool_name, str)
    assert value.rule_content is None or isinstance(value.rule_content, str)


def _write(path: str, payload: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
        fh.write(payload)


COUNTS: collections.Counter = collections.Counter()


def _inputs(ws: str) -> list[tuple[str, dict]]:
    return [
        ("Read", {"file_path": os.path.join(ws, "a.py")}),
        ("Read", {"file_path": "/etc/hostname"}),
        ("Edit", {"file_path": os.path.join(ws, "a.py"), "old_string": "a", "new_string": "b"}),
        ("Edit", {"file_path": os.path.join(ws, ".git", "config"), "old_string": "a", "new_string": "b"}),
        ("Write", {"file_path": "/tmp/elsewhere.txt", "content": "x"}),
        ("Grep", {"pattern": "x"}),
        ("Glob", {"pattern": "**/*.py"}),
        ("Bash", {"command": "ls"}),
        ("Bash", {"command": "rm -rf build && git push origin main"}),
        ("Bash", {"command": "echo hi > out.txt"}),
    ]


@FUZZ
@given(
    user=SETTINGS_DOC, project=SETTINGS_DOC, local=st.one_of(SETTINGS_DOC, NASTY),
    cli_allowed=st.lists(RULE_STRINGS, max_size=3), cli_disallowed=st.lists(RULE_STRINGS, max_size=3),
    trusted=st.booleans(), raw_user=st.booleans(),
)
def _settings_case(user, project, local, cli_allowed, cli_disallowed, trusted, raw_user):
    """Random settings files (valid JSON of any shape, or junk text) load without raising; decisions stay sane."""
    with tempfile.TemporaryDirectory() as root:
        ws = os.path.join(root, "ws")
        os.makedirs(os.path.join(ws, ".git"))
        os.environ["CLAUDE_CONFIG_DIR"] = os.path.join(root, "cfg")  # the autouse fixture restores it
        _write(os.path.join(root, "cfg", "settings.json"), user if raw_user and isinstance(user, str)
               else json.dumps(user))
        _write(os.path.join(ws, ".claude", "settings.json"), json.dumps(project))
        _write(os.path.join(ws, ".claude", "settings.local.json"),
               local if isinstance(local, str) else json.dumps(local))
        broken = {path for path in (os.path.join(root, "cfg", "settings.json"),
                                    os.path.join(ws, ".claude", "settings.json"),
                                    os.path.join(ws, ".claude", "settings.local.json")) if not _an_object(path)}
        try:
            loaded = load_settings(ws, cli_allowed=cli_allowed, cli_disallowed=cli_disallowed, trusted=trusted)
        except SettingsError as exc:  # fails closed: nothing loads, exactly when a file is not a JSON object
            assert exc.path in broken, (exc, broken)
            COUNTS["stopped"] += 1
            return
        assert not broken, broken
        assert all(isinstance(w, str) for w in loaded.warnings)
        pc = PermissionContext.load(ws, cli_allowed=cli_allowed, cli_disallowed=cli_disallowed, trusted=trusted)
        ctx = ToolUseContext(cwd=ws, permission_context=pc, tools=list(TOOLS.values()))
        for name, raw in _inputs(ws):
            d = _decide(ctx, name, raw)
            _check_decision(d)
            COUNTS[d.behavior] += 1


def test_fuzz_settings_files_load_and_decide():
    """Random settings files (valid JSON of any shape, or junk text) load, or stop with a SettingsError naming a
    file that is not a JSON object; decisions stay sane."""
    COUNTS.clear()
    _settings_case()
    print(f"settings fuzz: {sum(COUNTS.values())} decisions {dict(COUNTS)}")
    assert sum(v for k, v in COUNTS.items() if k != "stopped") > 0


@FUZZ
@given(
    rules=st.lists(st.tuples(st.sampled_from(["allow", "deny", "ask"]), RULE_STRINGS, st.sampled_from(SOURCES)),
                   max_size=8),
    mode=st.sampled_from(MODES),
    which=st.integers(0, 9),
)
def test_fuzz_random_rules_decisions_well_formed(rules, mode, which):
    with tempfile.TemporaryDirectory() as root:
        ws = os.path.join(root, "ws")
        os.makedirs(os.path.join(ws, ".git"))
        prs = [PermissionRule(value=parse_rule(t), behavior=b, source=s) for b, t, s in rules]  # type: ignore[arg-type]
        pc = PermissionContext(ws, mode=mode, rules=prs)
        ctx = ToolUseContext(cwd=ws, permission_context=pc, tools=list(TOOLS.values()))
        name, raw = _inputs(ws)[which]
        _check_decision(_decide(ctx, name, raw))


# ------------------------------------------------------------------ deny beats allow

SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=8).filter(
    lambda s: s not in (".", ".."))


@st.composite
def matching_case(draw):
    """A tool input, a deny rule that matches it, and allow rules that match it too."""
    kind = draw(st.sampled_from(["bash", "edit", "write", "read"]))
    if kind == "bash":
        word = draw(st.sampled_from(WORDS))
        args = draw(st.lists(SEGMENT, max_size=3))
        command = " ".join([word, *args])
        deny = draw(st.sampled_from([f"Bash({word}:*)", f"Bash({command})", "Bash", f"Bash({word} *)"]))
        allow = draw(st.lists(st.sampled_from([f"Bash({word}:*)", f"Bash({command})", "Bash", "Bash(*)",
                                               f"Bash({word} *)"]), min_size=1, max_size=3))
        return "Bash", {"command": command}, deny, allow, None
    parts = draw(st.lists(SEGMENT, min_size=1, max_size=3))
    rel = "/".join(parts)
    tool = {"edit": "Edit", "write": "Write", "read": "Read"}[kind]
    rule_tool = "Read" if kind == "read" else "Edit"
    deny = draw(st.sampled_from([f"{rule_tool}({rel})", f"{rule_tool}(./{rel})", f"{rule_tool}(**)",
                                 f"{rule_tool}(//**)", f"{rule_tool}(//{{ws}}/**)", rule_tool if kind != "write" else "Write",
                                 f"{rule_tool}(**/{parts[-1]})"]))
    allow = draw(st.lists(st.sampled_from([f"{rule_tool}({rel})", f"{rule_tool}(**)", tool, f"{rule_tool}(/**)"]),
                          min_size=1, max_size=3))
    if kind == "edit":
        raw = {"old_string": "a", "new_string": "b"}
    elif kind == "write":
        raw = {"content": "x"}
    else:
        raw = {}
    return tool, raw, deny, allow, rel


@FUZZ
@given(case=matching_case(), mode=st.sampled_from(MODES), deny_source=st.sampled_from(SOURCES),
       allow_source=st.sampled_from(SOURCES), allow_first=st.booleans())
def test_fuzz_deny_rule_never_overridden_by_allow(case, mode, deny_source, allow_source, allow_first):
    tool, raw, deny, allows, rel = case
    with tempfile.TemporaryDirectory() as root:
        ws = os.path.join(root, "ws")
        os.makedirs(ws)
        if rel is not None:
            raw = dict(raw, file_path=os.path.join(ws, rel))
            deny = deny.replace("{ws}", ws.lstrip("/"))  # "//" + absolute path without its leading "/"
        deny_rule = PermissionRule(value=parse_rule(deny), behavior="deny", source=deny_source)  # type: ignore[arg-type]
        allow_rules = [PermissionRule(value=parse_rule(a), behavior="allow", source=allow_source)  # type: ignore[arg-type]
                       for a in allows]
        ordered = allow_rules + [deny_rule] if allow_first else [deny_rule] + allow_rules
        pc = PermissionContext(ws, mode=mode, rules=ordered)
        ctx = ToolUseContext(cwd=ws, permission_context=pc, tools=list(TOOLS.values()))
        d = _decide(ctx, tool, raw)
        assert d.behavior == "deny", (tool, raw, deny, allows, mode, d)
        assert d.message


def test_deny_beats_allow_figure():
    """A fixed sweep over every mode and every source pair; prints the count of checked combinations."""
    checked = 0
    with tempfile.TemporaryDirectory() as ws:
        for mode in MODES:
            for ds in SOURCES:
                for as_ in SOURCES:
                    rules = [PermissionRule(value=parse_rule("Bash"), behavior="allow", source=as_),  # type: ignore[arg-type]
                             PermissionRule(value=parse_rule("Bash(rm:*)"), behavior="deny", source=ds)]  # type: ignore[arg-type]
                    ctx = ToolUseContext(cwd=ws, permission_context=PermissionContext(ws, mode=mode, rules=rules),
                                         tools=list(TOOLS.values()))
                    assert _decide(ctx, "Bash", {"command": "rm -rf x"}).behavior == "deny"
                    assert _decide(ctx, "Bash", {"command": "FOO=1 rm -rf x"}).behavior == "deny"
                    assert _decide(ctx, "Bash", {"command": "ls && rm -rf x"}).behavior == "deny"
                    checked += 3
    print(f"deny-over-allow combinations checked: {checked}")
    assert checked == len(MODES) * len(SOURCES) ** 2 * 3
