"""run_tool_use: the six steps and their exits (SPEC §3.1–3.4; §9 items 11–18, 56, 57)."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop_agent.engine.execution import current_call, run_tool_use
from desktop_agent.core.events import PermissionRequested
from desktop_agent.core.permission import PermissionReply, PermissionTarget
from desktop_agent.core.tool import ToolInput, ToolResult, build_tool

from .helpers import FakePrompter, PathInput, Tracker, ctx_with, make_tools, tool_use, touches_nothing


def run(coro):
    return asyncio.run(coro)


def test_unknown_tool_is_one_error_and_nothing_runs(tmp_path):
    tr = Tracker()
    ctx = ctx_with(make_tools(tr), tmp_path)
    out = run(run_tool_use(tool_use("NoSuchTool", {"x": 1}, "toolu_x"), ctx))
    assert out.block == {
        "type": "tool_result", "tool_use_id": "toolu_x", "is_error": True,
        "content": "<tool_use_error>Error: No such tool available: NoSuchTool</tool_use_error>",
    }
    assert tr.validated == [] and tr.permission_checked == [] and tr.calls == []


def test_alias_among_this_turns_tools_resolves(tmp_path):
    tr = Tracker()
    ctx = ctx_with(make_tools(tr), tmp_path)
    out = run(run_tool_use(tool_use("str_replace", {"file_path": "a", "old_string": "x", "new_string": "y"}), ctx))
    assert not out.is_error and out.tool_name == "Edit"


def test_deprecated_alias_of_builtin_not_sent_resolves(tmp_path, monkeypatch):
    tr = Tracker()
    tools = make_tools(tr)
    edit = tools[2]
    import desktop_agent.tools.registry as registry

    monkeypatch.setattr(registry, "all_builtin_tools", lambda: (edit,))
    ctx = ctx_with(tools[:1], tmp_path)  # Edit was not sent this turn
    out = run(run_tool_use(tool_use("EditFile", {"file_path": "a", "old_string": "x", "new_string": "y"}), ctx))
    assert not out.is_error and out.tool_name == "Edit"
    # A non-deprecated name (or alias) of an unsent tool does not resolve.
    out = run(run_tool_use(tool_use("Edit", {"file_path": "a", "old_string": "x", "new_string": "y"}), ctx))
    assert out.block["content"] == "<tool_use_error>Error: No such tool available: Edit</tool_use_error>"
    out = run(run_tool_use(tool_use("str_replace", {"file_path": "a", "old_string": "x", "new_string": "y"}), ctx))
    assert out.block["content"] == "<tool_use_error>Error: No such tool available: str_replace</tool_use_error>"


@pytest.mark.parametrize(
    "inp,expected",
    [
        ({"file_path": "/a", "new_string": "y"},
         "<tool_use_error>InputValidationError: Edit failed due to the following issue:\n"
         "The required parameter `old_string` is missing</tool_use_error>"),
        ({"file_path": "/a", "old_string": "x", "new_string": "y", "foo": 1},
         "<tool_use_error>InputValidationError: Edit failed due to the following issue:\n"
         "An unexpected parameter `foo` was provided</tool_use_error>"),
        ({"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": "yes"},
         "<tool_use_error>InputValidationError: Edit failed due to the following issue:\n"
         "The parameter `replace_all` type is expected as `boolean` but provided as `string`</tool_use_error>"),
        ({"file_path": "/a", "old_string": 5, "new_string": "y"},
         "<tool_use_error>InputValidationError: Edit failed due to the following issue:\n"
         "The parameter `old_string` type is expected as `string` but provided as `number`</tool_use_error>"),
        ({"file_path": "/a", "bogus": True},
         "<tool_use_error>InputValidationError: Edit failed due to the following issues:\n"
         "The required parameter `old_string` is missing\n"
         "The required parameter `new_string` is missing\n"
         "An unexpected parameter `bogus` was provided</tool_use_error>"),
    ],
)
def test_schema_errors_have_exact_text_and_never_ask(tmp_path, inp, expected):
    tr = Tracker()
    prompter = FakePrompter()
    events = []
    ctx = ctx_with(make_tools(tr), tmp_path, prompter=prompter, emit=events.append)
    out = run(run_tool_use(tool_use("Edit", inp, "toolu_edit_2"), ctx))
    assert out.block["content"] == expected
    assert out.block["is_error"] is True and out.block["tool_use_id"] == "toolu_edit_2"
    assert prompter.requests == [] and not [e for e in events if isinstance(e, PermissionRequested)]
    assert tr.validated == [] and tr.calls == []


def test_nested_paths_are_written_like_todos_0_active_form(tmp_path):
    from pydantic import BaseModel

    class Todo(BaseModel):
        content: str
        activeForm: str

    class TodoInput(ToolInput):
        todos: list[Todo]

    tool = build_tool("TodoWrite", TodoInput, call=lambda self, i, c: ToolResult("ok"), description="todo")
    ctx = ctx_with([tool], tmp_path)
    out = run(run_tool_use(tool_use("TodoWrite", {"todos": [{"content": "x"}]}), ctx))
    assert "The required parameter `todos[0].activeForm` is missing" in out.block["content"]


def test_validate_input_failure_is_wrapped_and_skips_permission(tmp_path):
    from desktop_agent.core.tool import ValidationResult

    prompter = FakePrompter()
    tool = build_tool(
        "Edit", PathInput, description="e",
        validate_input=lambda self, i, c: ValidationResult.fail(
            "File has not been read yet. Read it first before writing to it.", 6),
        permission_target=lambda self, i, c: PermissionTarget(kind="generic", summary=i.file_path),
        call=lambda self, i, c: ToolResult("should not run"),
    )
    ctx = ctx_with([tool], tmp_path, prompter=prompter)
    out = run(run_tool_use(tool_use("Edit", {"file_path": "x"}), ctx))
    assert out.block["content"] == (
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>")
    assert prompter.requests == []


def test_exception_in_call_becomes_error_result(tmp_path):
    def boom(self, i, c):
        raise RuntimeError("File has been unexpectedly modified. Read it again before attempting to write it.")

    tool = build_tool("Edit", PathInput, description="e", call=boom)
    out = run(run_tool_use(tool_use("Edit", {"file_path": "x"}, "t9"), ctx_with([tool], tmp_path)))
    assert out.block == {
        "type": "tool_result", "tool_use_id": "t9", "is_error": True,
        "content": "<tool_use_error>File has been unexpectedly modified. Read it again before attempting to write "
                   "it.</tool_use_error>",
    }


def test_ask_goes_to_prompter_and_deny_is_bare_user_denied(tmp_path):
    calls = []
    tool = build_tool(
        "Edit", PathInput, description="e",
        permission_target=lambda self, i, c: PermissionTarget(kind="generic", summary=i.file_path),
        call=lambda self, i, c: calls.append(1) or ToolResult("done"),
    )
    from desktop_agent.core.permission import PermissionRequest  # noqa: F401

    class Ctx:
        mode = "default"

    prompter = FakePrompter(PermissionReply(behavior="deny"))
    ctx = ctx_with([tool], tmp_path, prompter=prompter, permission_context=Ctx())
    out = run(run_tool_use(tool_use("Edit", {"file_path": "x"}, "toolu_edit_2"), ctx))
    assert out.block == {"type": "tool_result", "tool_use_id": "toolu_edit_2", "is_error": True,
                         "content": "User denied via UI"}
    assert calls == []
    req = prompter.requests[0]
    assert req.tool_use_id == "toolu_edit_2" and req.request_id != "toolu_edit_2"


def test_allow_with_updated_input_marks_user_modified(tmp_path):
    seen = {}

    def call(self, i, c):
        seen["path"] = i.file_path
        seen["modified"] = current_call().user_modified
        return ToolResult("done")

    class Ctx:
        mode = "default"

    tool = build_tool("Edit", PathInput, description="e", call=call,
                      permission_target=lambda self, i, c: PermissionTarget(kind="generic", summary=i.file_path))
    prompter = FakePrompter(PermissionReply(behavior="allow", updated_input={"file_path": "other"}))
    out = run(run_tool_use(tool_use("Edit", {"file_path": "x"}), ctx_with([tool], tmp_path, prompter=prompter,
                                                                           permission_context=Ctx())))
    assert not out.is_error and seen == {"path": "other", "modified": True}
    # An empty updatedInput means "keep the original input".
    prompter.reply = PermissionReply(behavior="allow", updated_input={})
    out = run(run_tool_use(tool_use("Edit", {"file_path": "x"}, "t2"), ctx_with([tool], tmp_path, prompter=prompter,
                                                                                permission_context=Ctx())))
    assert seen == {"path": "x", "modified": False}


def test_build_tool_defaults(tmp_path):
    tool = build_tool("Plain", ToolInput, description="p", call=lambda self, i, c: ToolResult("x"))
    ctx = ctx_with([tool], tmp_path)
    assert tool.is_concurrency_safe(None) is False
    assert tool.is_read_only(None) is False
    assert tool.interrupt_behavior() == "block"
    target = tool.permission_target(ToolInput(), ctx)
    assert target.kind == "generic"  # fail closed: a tool that declares nothing is one the policy knows nothing of
    from desktop_agent.permissions.decide import target_decision

    assert target_decision(target, tool.name, {}, ctx).behavior == "passthrough"  # → ask, unless a rule/mode allows
    opted_in = build_tool("Plain", ToolInput, description="p", permission_target=touches_nothing,
                          call=lambda self, i, c: ToolResult("x"))
    assert target_decision(opted_in.permission_target(ToolInput(), ctx), opted_in.name, {}, ctx).behavior == "allow"


def test_result_over_cap_is_persisted_with_preview(tmp_path):
    tool = build_tool("Grep", ToolInput, description="g", max_result_size_chars=20_000,
                      call=lambda self, i, c: ToolResult("x" * 50_000))
    assert tool.max_result_size_chars == 20_000
    out = run(run_tool_use(tool_use("Grep", {}, "tg"), ctx_with([tool], tmp_path)))
    content = out.block["content"]
    assert len(content) < 5_000 and "Output too large (50000 characters" in content
    path = content.split("Full output saved to: ")[1].split("\n")[0]
    assert len(open(path).read()) == 50_000


# ---- fuzz: never raises, always exactly one well-formed result with the right id ----

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=10,
)
_inputs = st.one_of(
    _json,
    st.fixed_dictionaries({"file_path": st.one_of(st.text(), st.integers(), st.none())},
                          optional={"old_string": _json, "new_string": _json, "replace_all": _json,
                                    "offset": _json, "extra": _json}),
    st.fixed_dictionaries({"file_path": st.integers(1_000, 200_000).map(lambda n: "x" * n)}),
)
_names = st.sampled_from(["Read", "Edit", "Grep", "str_replace", "EditFile", "Nope", "", "read"]) | st.text(max_size=20)


@pytest.mark.timeout(900)  # 10,000 calls: 77 s on two idle cores, 113 s on CI's; the default 120 s was too near
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=_names, inp=_inputs, tid=st.text(min_size=1, max_size=30))
def test_fuzz_run_tool_use_always_one_result(name, inp, tid, tmp_path_factory):
    global _FUZZ_TOOLS
    if _FUZZ_TOOLS is None:
        _FUZZ_TOOLS = make_tools(Tracker(), delay=0)
    ctx = ctx_with(_FUZZ_TOOLS, tmp_path_factory.getbasetemp())
    out = _LOOP.run_until_complete(run_tool_use({"type": "tool_use", "id": tid, "name": name, "input": inp}, ctx))
    block = out.block
    assert block["type"] == "tool_result" and block["tool_use_id"] == tid
    assert isinstance(block["content"], (str, list))
    assert set(block) <= {"type", "tool_use_id", "content", "is_error"}


_LOOP = asyncio.new_event_loop()
_FUZZ_TOOLS = None
