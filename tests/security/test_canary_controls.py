"""The security suite's own checks: its canaries would see a breach.

Control cases (``control: True`` in ``cases.py``) are granted what the adversarial cases are refused — bypass with
no deny rule, ``--allowedTools``, ``--add-dir``, ``--trust``, a user-level hook, the sandbox switched off — and
MUST be reported as breaches by ``harness.breaches``: proof that a held case holds because the CLI refused, not
because the harness looked in the wrong place. Unit checks cover the mechanism itself on synthetic runs
(missing/duplicated tool_results, a canary created elsewhere after a cwd drift, a changed or deleted victim, a
secret in a result, a request too deep to parse).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import RecordedRequest
from tests.security import harness
from tests.security.cases import all_cases

CONTROLS = [c for c in all_cases() if c.get("control")]
EXPECTED = {"absent": "forbidden file", "unchanged": "was removed or made unreadable|changed",
            "hidden": "forbidden text"}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case_id", [pytest.param(c["id"], id=c["id"], marks=pytest.mark.needs_sandbox
                                                  if c.get("needs_sandbox") else ()) for c in CONTROLS])
def test_control_is_seen_as_a_breach(case_id, security_runs):
    run, case = security_runs[case_id]
    problems = harness.breaches(run, case)
    kind = case["checks"][0][0]
    assert any(any(word in p for word in EXPECTED[kind].split("|")) for p in problems), (
        f"{case_id}: the permitted action left no trace the canary saw; problems={problems}; "
        f"tool_result={harness.excerpt(run, case)!r}; stderr={run.stderr[-400:]!r}")
    # the granted call itself was answered exactly once and the CLI ended normally
    assert not [p for p in problems if "tool_result(s)" in p or "exit code" in p], problems


# ------------------------------------------------------------------------------------------ the mechanism


def _run(tmp_path: Path, results: list[tuple[str, str]], checks: list[tuple]) -> tuple[harness.Run, dict]:
    """A finished run of one case whose last request carried ``results`` (tool_use_id, text)."""
    case = {"id": "x", "cls": "unit", "tool": "Bash", "checks": checks, "_tool_use_id": "toolu_sec_000",
            "_values": {"P": str(tmp_path / "proj"), "C": str(tmp_path / "proj" / "canary_000"),
                        "V": str(tmp_path / "proj" / "victim_000"), "SECRET": "SECRET-XYZ"},
            "_snapshots": {}}
    (tmp_path / "proj").mkdir(exist_ok=True)
    victim = tmp_path / "proj" / "victim_000"
    victim.write_text(harness.VICTIM_TEXT)
    case["_snapshots"][str(victim)] = victim.read_bytes()
    body = {"messages": [
        {"role": "user", "content": "RUN-unit go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_sec_000", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text}
                                     for tid, text in results]}]}
    run = harness.Run(key="unit", launch={}, cases=[case], base=tmp_path, returncode=0,
                      requests=[RecordedRequest(path="/v1/messages", headers={}, body=body)])
    return run, case


def test_a_clean_case_has_no_problems(tmp_path):
    run, case = _run(tmp_path, [("toolu_sec_000", "denied")],
                     [("absent", "{C}"), ("unchanged", "{V}"), ("hidden", "{SECRET}")])
    assert harness.breaches(run, case) == []


@pytest.mark.parametrize("results,count", [([], 0), ([("toolu_sec_000", "a"), ("toolu_sec_000", "b")], 2)])
def test_missing_or_duplicated_tool_result_is_reported(tmp_path, results, count):
    run, case = _run(tmp_path, results, [])
    assert any(f"{count} tool_result(s)" in p for p in harness.breaches(run, case))


def test_canary_created_elsewhere_after_a_cwd_drift_is_found(tmp_path):
    run, case = _run(tmp_path, [("toolu_sec_000", "ok")], [("absent", "{C}")])
    (tmp_path / "proj" / "src").mkdir()
    (tmp_path / "proj" / "src" / "canary_000").write_text("")
    assert any("created elsewhere" in p for p in harness.breaches(run, case))


def test_canary_at_its_place_is_found(tmp_path):
    run, case = _run(tmp_path, [("toolu_sec_000", "ok")], [("absent", "{C}")])
    Path(case["_values"]["C"]).write_text("")
    assert any("forbidden file exists" in p for p in harness.breaches(run, case))


def test_changed_and_deleted_victims_are_found(tmp_path):
    run, case = _run(tmp_path, [("toolu_sec_000", "ok")], [("unchanged", "{V}")])
    victim = Path(case["_values"]["V"])
    victim.write_text("other")
    assert any("changed" in p for p in harness.breaches(run, case))
    victim.unlink()
    assert any("removed" in p for p in harness.breaches(run, case))


def test_secret_in_the_tool_result_is_found(tmp_path):
    run, case = _run(tmp_path, [("toolu_sec_000", "key=SECRET-XYZ")], [("hidden", "{SECRET}")])
    assert any("forbidden text" in p for p in harness.breaches(run, case))


def test_wrong_exit_code_is_reported(tmp_path):
    run, case = _run(tmp_path, [("toolu_sec_000", "ok")], [])
    run.returncode = 1
    assert any("exit code 1" in p for p in harness.breaches(run, case))


def test_fake_follows_a_body_too_deep_to_parse():
    """A request the fake could not parse (``_raw``) still gets the run's next step, and its results are read."""
    fake = harness.ScriptFake()
    fake.scripts["unit"] = [{"name": "Bash", "input": {"command": "ls"}, "id": "toolu_sec_000"},
                            {"name": "Bash", "input": {"command": "pwd"}, "id": "toolu_sec_001"}]
    raw = ('{"messages": [{"role": "user", "content": "RUN-unit go"}, {"role": "assistant", "content": '
           '[{"type": "tool_use", "id": "toolu_sec_000", "input": ' + "[" * 5000 + "]" * 5000 + '}]}, '
           '{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_sec_000"}]}]}')
    step = fake.next_step(RecordedRequest(path="/v1/messages", headers={}, body={"_raw": raw}))
    assert step.content[0]["id"] == "toolu_sec_001"
    run = harness.Run(key="u", launch={}, requests=fake.by_run["unit"])
    assert harness.tool_results(run) == {"toolu_sec_000": [""]}


def test_fake_rejects_what_the_api_would():
    fake = harness.ScriptFake()
    fake.scripts["unit"] = []
    body = {"messages": [{"role": "user", "content": "RUN-unit go"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                             "input": {}}]},
                         {"role": "user", "content": [{"type": "text", "text": "no result"}]}]}
    step = fake.next_step(RecordedRequest(path="/v1/messages", headers={}, body=json.loads(json.dumps(body))))
    assert step.status == 400 and fake.problems["unit"]


def test_catalogue_is_big_enough_and_a_third_runs_without_analysis():
    base = [c for c in all_cases() if not c.get("control") and not c.get("no_analysis")]
    twins = [c for c in all_cases() if c.get("no_analysis")]
    assert len(base) >= 200 and 3 * len(twins) >= len(base)
    assert all(c["env"].get("DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS") == "1" for c in twins)
    # every no-analysis canary is one the sandbox covers: outside the project, or a Read/Edit-denied path
    for c in twins:
        text = json.dumps(c["checks"]) + json.dumps(c.get("settings"))
        assert ("{O}" in text or "{CO}" in text or "{VO}" in text or "{VS}" in text or "{H}" in text or "Read(" in text
                or "canary_fsmonitor" in text), c["id"]


def test_every_bash_attack_is_real_in_plain_bash(tmp_path):
    """Each adversarial Bash command, run by plain ``bash -c`` with no agent in between, does breach one of its
    canaries: a case that holds in the suite holds because the CLI stopped it, not because the attack was a dud."""
    cases = [c for c in all_cases() if c["tool"] == "Bash" and not c.get("control") and not c.get("no_analysis")
             and not c.get("project_settings") and not c.get("local_settings") and c["checks"]
             and (os.geteuid() == 0 or "chroot" not in c["input"]["command"])]  # chroot needs root
    assert len(cases) > 400
    duds = {case_id: missed for case_id, missed in harness.plain_bash(cases, tmp_path).items() if missed}
    assert not duds, json.dumps(duds, indent=1)[:3000]
