"""Resume (SPEC §5.3; §9 items 85–87): the chain a transcript restores, clean-up of an interrupted turn.

AgentSession's persistence and resume are tested in tests/app/test_session.py.
"""

from __future__ import annotations

from desktop_agent.core.messages import assistant_entry, normalize_for_api, system_entry, tool_result_block, user_entry
from desktop_agent.session.resume import (
    CONTINUE_MESSAGE, NO_RESPONSE_REQUESTED, build_chain, history_for_display, load_conversation_for_resume,
)
from desktop_agent.session.store import TranscriptStore, read_transcript


def _tu(id_: str) -> dict:
    return {"type": "tool_use", "id": id_, "name": "Read", "input": {"file_path": "a"}}


def _conversation(store: TranscriptStore) -> list[dict]:
    u1 = user_entry("u1")
    a1 = assistant_entry([_tu("t1")])
    u2 = user_entry([tool_result_block("t1", "r1")])
    a2 = assistant_entry([{"type": "text", "text": "a2"}])
    u3 = user_entry("u3")
    a3 = assistant_entry([{"type": "text", "text": "a3"}])
    msgs = [u1, a1, u2, a2, u3, a3]
    store.record_all(msgs)
    return msgs


def test_restored_array_is_the_chain_without_metadata(workdir):
    store = TranscriptStore.create(str(workdir))
    msgs = _conversation(store)
    store.record_permission_state({"mode": "plan"})
    store.close()
    resumed = load_conversation_for_resume(read_transcript(store.path))
    assert [m["uuid"] for m in resumed.messages] == [m["uuid"] for m in msgs]
    assert resumed.messages == msgs
    assert not resumed.interrupted and resumed.added == []
    assert resumed.permission_state["mode"] == "plan"
    assert resumed.chain_tip == msgs[-1]["uuid"]


def test_chain_order_not_line_order_and_boundary_cut(workdir):
    store = TranscriptStore.create(str(workdir))
    old = _conversation(store)
    boundary = system_entry("compact_boundary", "Conversation compacted", logicalParentUuid=old[-1]["uuid"])
    summary = user_entry("This session is being continued ...", isCompactSummary=True)
    after = assistant_entry([{"type": "text", "text": "post"}])
    store.record_all([boundary, summary, after])
    store.close()
    entries = read_transcript(store.path)
    b = next(e for e in entries if e.get("subtype") == "compact_boundary")
    assert b["parentUuid"] is None and b["logicalParentUuid"] == old[-1]["uuid"]
    resumed = load_conversation_for_resume(entries)
    assert [m["uuid"] for m in resumed.messages] == [boundary["uuid"], summary["uuid"], after["uuid"]]
    # the desktop's history view still shows the pre-boundary messages, in file order
    shown = [e["uuid"] for e in history_for_display(entries)]
    assert shown[:6] == [m["uuid"] for m in old] and after["uuid"] in shown
    # what the API sees: no system boundary
    assert [m["role"] for m in normalize_for_api(resumed.messages)] == ["user", "assistant"]


def test_sidechain_and_line_order_do_not_matter():
    a = user_entry("a", parentUuid=None)
    b = assistant_entry([{"type": "text", "text": "b"}], parentUuid=a["uuid"])
    c = user_entry("c", parentUuid=b["uuid"])
    side = user_entry("side", parentUuid=a["uuid"], isSidechain=True)
    assert [m["uuid"] for m in build_chain([c, side, a, b])] == [a["uuid"], b["uuid"]] or \
        [m["uuid"] for m in build_chain([a, b, side, c])] == [a["uuid"], b["uuid"], c["uuid"]]
    assert [m["uuid"] for m in build_chain([a, b, side, c])] == [a["uuid"], b["uuid"], c["uuid"]]


def test_unanswered_tool_use_removed_and_continue_appended(workdir):
    store = TranscriptStore.create(str(workdir))
    u1 = user_entry("u1")
    a1 = assistant_entry([_tu("t1"), _tu("t2")])
    r1 = user_entry([tool_result_block("t1", "r1")])
    a2 = assistant_entry([{"type": "thinking", "thinking": "hmm", "signature": "s"}, _tu("t3")])  # never answered
    store.record_all([u1, a1, r1, a2])
    store.close()
    resumed = load_conversation_for_resume(read_transcript(store.path))
    assert set(resumed.removed_tool_use_ids) == {"t2", "t3"}
    kept_ids = [b.get("id") for m in resumed.messages for b in (m["message"]["content"] if isinstance(
        m["message"]["content"], list) else []) if b.get("type") == "tool_use"]
    assert kept_ids == ["t1"]
    assert resumed.interrupted
    cont = resumed.messages[-2]
    assert cont["isMeta"] is True and cont["message"]["content"] == CONTINUE_MESSAGE
    assert resumed.messages[-1]["type"] == "assistant"
    assert resumed.messages[-1]["message"]["content"][0]["text"] == NO_RESPONSE_REQUESTED
    # the result is valid for the API: every tool_use answered, roles alternate
    api = normalize_for_api(resumed.messages)
    assert [m["role"] for m in api] == ["user", "assistant", "user", "assistant"]


def test_trailing_user_prompt_gets_a_synthetic_assistant(workdir):
    msgs = [user_entry("u1"), assistant_entry([{"type": "text", "text": "a1"}]), user_entry("u2")]
    for prev, cur in zip(msgs, msgs[1:]):
        cur["parentUuid"] = prev["uuid"]
    resumed = load_conversation_for_resume(msgs)
    assert not resumed.interrupted
    assert resumed.messages[-1]["type"] == "assistant" and resumed.messages[-1]["isSynthetic"]
    assert len(resumed.added) == 1


def _deferred_chain(tmp_path, *uses: str, record_for: str | None = None, answered: bool = False):
    from desktop_agent.session.resume import deferred_record

    store = TranscriptStore(tmp_path / "s.jsonl", "s", str(tmp_path))
    store.record(user_entry("write it"))
    store.record(assistant_entry([{"type": "text", "text": "ok"}, *(_tu(u) for u in uses)]))
    store.record(deferred_record(record_for or uses[0], "Write", {"file_path": "/x", "content": "y"}, "default"))
    if answered:
        store.record(user_entry([tool_result_block(uses[0], "done")]))
    store.close()
    return load_conversation_for_resume(read_transcript(tmp_path / "s.jsonl"))


def test_a_deferred_call_is_kept_pending_on_resume(tmp_path):
    """SPEC D.6: the chain ends with the one unanswered call a record names: it is kept (not stripped), nothing is
    added, and the API view is the conversation up to the call (its result comes when the session runs it)."""
    got = _deferred_chain(tmp_path, "toolu_1")
    assert got.deferred is not None and got.deferred.block["id"] == "toolu_1"
    assert got.deferred.wire() == {"id": "toolu_1", "name": "Read", "input": {"file_path": "a"}}
    assert got.added == [] and not got.interrupted and got.removed_tool_use_ids == []
    api = normalize_for_api(got.messages)
    assert api[-1]["role"] == "assistant" and api[-1]["content"][-1]["id"] == "toolu_1"


def test_what_is_not_a_pending_deferred_call(tmp_path):
    """A record naming another id, a call already answered, or a reply with two calls: resumed as usual (an
    unanswered call stripped, the continuation message added)."""
    other = _deferred_chain(tmp_path / "a", "toolu_1", record_for="toolu_9")
    assert other.deferred is None and other.removed_tool_use_ids == ["toolu_1"]
    done = _deferred_chain(tmp_path / "b", "toolu_1", answered=True)
    assert done.deferred is None and done.removed_tool_use_ids == []
    two = _deferred_chain(tmp_path / "c", "toolu_1", "toolu_2")
    assert two.deferred is None and sorted(two.removed_tool_use_ids) == ["toolu_1", "toolu_2"]
    for got in (other, two):
        api = normalize_for_api(got.messages)
        assert not any(b.get("type") == "tool_use" for m in api for b in m["content"])
