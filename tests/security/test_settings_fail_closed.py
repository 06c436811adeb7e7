"""Issue 22, class 1: settings that cannot be read fail closed, through the real CLI.

Every case launches ``python -m desktop_agent -p`` against the security suite's scripted model, whose one call is
``rm {V}`` (a victim file the canary watches), with the issue's deny rules (``DENY``) given in a settings source that
is broken in one way. A source that cannot be read or parsed must stop the CLI with exit 2 before the model is called,
naming the source's file and the position on stderr; a readable source with an invalid entry must run with every
valid entry in force (the victim stays) and name the file and the entry on stderr. Each case runs in bypass and in
default mode with ``--allowedTools "Bash(rm:*)"`` (without the deny rule the call runs there too). A rule given on
the command line that is not valid (``--disallowedTools "bash(rm:*)"``) still stops the CLI (exit 2).

The controls prove the canary would see the breach: the same call with no settings removes the victim, in bypass and
in default mode with the allow rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.security import harness

DENY = ["Bash(rm:*)", "Bash(curl *)", "Read(./.env)", "Read(./secrets/**)", "Edit(src/**)"]
RULES = {"permissions": {"deny": DENY}}
BOM = "\ufeff"
USER, PROJECT, LOCAL = "{H}/.claude/settings.json", "{P}/.claude/settings.json", "{P}/.claude/settings.local.json"
MANAGED, DROP_IN, FLAG = "{H}/managed/managed-settings.json", "{H}/managed/managed-settings.d/10-team.json", "{O}/s.json"
MODES = {"bypass": ("bypassPermissions", []), "default": ("default", ["--allowedTools", "Bash(rm:*)"])}
TRUNCATED = '{"permissions": {"deny": ["Bash(rm:*)", "Read(./.env)"'
TRAILING = '{\n  "permissions": {\n    "deny": [\n      "Bash(rm:*)",\n    ]\n  }\n}\n'
COMMENT = '{\n  // no rm\n  "permissions": {"deny": ["Bash(rm:*)"]}\n}\n'
BLOCK_COMMENT = '{"permissions": {"deny": ["Bash(rm:*)"] /* no rm */}}'
TWICE = '{"permissions": {"deny": ["Bash(rm:*)"]},\n "permissions": {"allow": ["Read"]}}'
FIFO = "\0fifo"  # a named pipe in place of the file: reading it must not hang the start

# (id, files {path template: text, None for a directory, FIFO}, --settings value or None, stderr must contain)
STOPS: list[tuple[str, dict[str, str | None], str | None, list[str]]] = [
    ("flag-missing-file", {}, "{O}/missing.json", ["--settings file {O}/missing.json", "no such file"]),
    ("flag-invalid-json", {FLAG: TRUNCATED}, FLAG, ["--settings file {O}/s.json, line 1, column 55"]),
    ("flag-inline-invalid-json", {}, '{"permissions": {"deny": ["Bash(rm:*)"]', ["--settings JSON, line 1, column 40"]),
    ("flag-trailing-comma", {FLAG: TRAILING}, FLAG, ["{O}/s.json, line 4, column 19", "trailing comma"]),
    ("flag-comment", {FLAG: COMMENT}, FLAG, ["{O}/s.json, line 2, column 3", "comment"]),
    ("flag-block-comment", {FLAG: BLOCK_COMMENT}, FLAG, ["{O}/s.json, line 1, column 41", "comment"]),
    ("flag-permissions-twice", {FLAG: TWICE}, FLAG, ["{O}/s.json, line 2, column 2", '"permissions" is given twice']),
    ("flag-inline-permissions-twice", {}, TWICE.replace("\n", ""), ["--settings JSON", "given twice"]),
    ("flag-not-an-object", {FLAG: json.dumps(DENY)}, FLAG, ["{O}/s.json", "must be a JSON object"]),
    ("user-trailing-comma", {USER: TRAILING}, None, ["user settings {H}/.claude/settings.json, line 4"]),
    ("user-not-utf8", {USER: '{"permissions": {"deny": ["Bash(rm:*)"], "x": "\udce9"}}'}, None,
     ["user settings {H}/.claude/settings.json, line 1, column 48", "not UTF-8"]),
    ("user-settings-is-a-directory", {USER: None}, None, ["user settings {H}/.claude/settings.json"]),
    ("project-settings-is-a-fifo", {PROJECT: FIFO}, None, ["project settings {P}/.claude/settings.json",
                                                           "not a regular file"]),
    ("project-comment", {PROJECT: COMMENT}, None, ["project settings {P}/.claude/settings.json, line 2, column 3"]),
    ("project-permissions-twice", {PROJECT: TWICE}, None, ["project settings {P}/.claude/settings.json, line 2"]),
    ("local-invalid-json", {LOCAL: TRUNCATED}, None, ["local settings {P}/.claude/settings.local.json, line 1"]),
    ("managed-invalid-json", {MANAGED: TRUNCATED}, None, ["managed settings {H}/managed/managed-settings.json"]),
    ("managed-drop-in-trailing-comma", {DROP_IN: TRAILING}, None, ["managed settings " + DROP_IN, "trailing comma"]),
]

# (id, files, --settings value or None, stderr must contain): readable sources whose valid entries must hold
HOLDS: list[tuple[str, dict[str, str | None], str | None, list[str]]] = [
    ("user-bom", {USER: BOM + json.dumps(RULES)}, None, []),
    ("project-bom", {PROJECT: BOM + json.dumps(RULES)}, None, []),
    ("local-bom", {LOCAL: BOM + json.dumps(RULES)}, None, []),
    ("flag-file-bom", {FLAG: BOM + json.dumps(RULES)}, FLAG, []),
    ("flag-non-string-entry", {FLAG: json.dumps({"permissions": {"deny": ["Bash(rm:*)", 5]}})}, FLAG,
     ["permissions.deny[1] in {O}/s.json is 5"]),
    ("flag-inline-non-string-entry", {}, json.dumps({"permissions": {"deny": [{"rule": "x"}, "Bash(rm:*)"]}}),
     ["permissions.deny[0] in --settings JSON"]),
    ("flag-deny-is-a-string", {FLAG: json.dumps({"permissions": {"deny": "Bash(rm:*)"}})}, FLAG,
     ["permissions.deny in {O}/s.json must be a list of strings, not a string"]),
    ("flag-unbalanced-sibling", {FLAG: json.dumps({"permissions": {"deny": ["Bash(curl *", *DENY]}})}, FLAG,
     ["Permission rule 'Bash(curl *' in {O}/s.json (permissions.deny) is not valid (mismatched parentheses)"]),
    ("flag-unbalanced-same-tool", {FLAG: json.dumps({"permissions": {"deny": ["Bash(rm:*", "Bash(rm *)"]}})}, FLAG,
     ["'Bash(rm:*'"]),
    ("flag-lower-case-tool", {FLAG: json.dumps({"permissions": {"deny": ["bash(rm:*)"]}})}, FLAG,
     ["'bash(rm:*)' in {O}/s.json (permissions.deny) names no tool", "read as 'Bash(rm:*)'"]),
    ("flag-upper-case-tool", {FLAG: json.dumps({"permissions": {"deny": ["BASH(rm:*)"]}})}, FLAG,
     ["read as 'Bash(rm:*)'"]),
    ("flag-lower-case-whole-tool", {FLAG: json.dumps({"permissions": {"deny": ["bash"]}})}, FLAG, ["read as 'Bash'"]),
    ("project-lower-case-tool", {PROJECT: json.dumps({"permissions": {"deny": ["bash(rm:*)"]}})}, None,
     ["'bash(rm:*)' in {P}/.claude/settings.json (permissions.deny) names no tool"]),
    ("user-bom-and-unbalanced", {USER: BOM + json.dumps({"permissions": {"deny": ["Read(./.env", "Bash(rm:*)"]}})},
     None, ["'Read(./.env' in {H}/.claude/settings.json"]),
]


# (id, --disallowedTools value, stderr must contain): a rule given on the command line that is not valid stops the CLI
FLAG_RULES: list[tuple[str, str, list[str]]] = [
    ("cli-lower-case-tool", "bash(rm:*)", ["'bash(rm:*)' is not a valid permission rule"]),
    ("cli-unbalanced", "Bash(rm:*", ["'Bash(rm:*' is not a valid permission rule (mismatched parentheses)"]),
]


def _case(id: str, mode: str, files: dict[str, str | None], flag: str | None, stderr: list[str], *,
          stops: bool, control: bool = False, extra: list[str] | None = None) -> dict[str, Any]:
    permission_mode, args = MODES[mode]
    args = list(args) + (["--settings", flag] if flag is not None else []) + list(extra or [])
    return {"id": f"{id}@{mode}", "cls": "settings-fail-closed", "tool": "Bash", "input": {"command": "rm {V}"},
            "checks": [("unchanged", "{V}")], "mode": permission_mode, "args": args, "files": files,
            "stderr": stderr, "expect_exit": 2 if stops else None, "control": control}


CASES = [_case(i, m, f, s, e, stops=True) for i, f, s, e in STOPS for m in MODES] + \
        [_case(i, m, f, s, e, stops=False) for i, f, s, e in HOLDS for m in MODES] + \
        [_case(i, m, {}, None, e, stops=True, extra=["--disallowedTools", r]) for i, r, e in FLAG_RULES for m in MODES]
CONTROLS = [_case("control-no-settings", m, {}, None, [], stops=False, control=True) for m in MODES]
BY_ID = {c["id"]: c for c in CASES + CONTROLS}


def _execute(case: dict[str, Any], base: Path, fake: harness.ScriptFake) -> harness.Run:
    """One CLI run of one case (``harness.execute``, with the case's raw settings files written first)."""
    run = harness.Run(key=case["id"], launch={k: case.get(k) for k in harness.RUN_KEYS}, cases=[case])
    argv, _ = harness.prepare(run, base, fake)
    values = case["_values"]
    for template, body in case["files"].items():
        path = Path(harness.fill(template, values))
        path.parent.mkdir(parents=True, exist_ok=True)
        if body is None:
            path.mkdir()
        elif body == FIFO:
            os.mkfifo(path)
        else:
            path.write_bytes(body.encode("utf-8", "surrogateescape"))
    env = harness.cli_env(base / "home", fake, {})
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=base / "proj", env=env, capture_output=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        run.returncode = proc.returncode
        run.stdout = proc.stdout.decode("utf-8", "replace")
        run.stderr = proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        run.error = "CLI did not finish within 120s (hung)"
    run.seconds = time.perf_counter() - t0
    with fake._lock:
        run.requests = list(fake.by_run.get(run.values["RUN_ID"], []))
        run.problems = list(fake.problems.get(run.values["RUN_ID"], []))
    return run


@pytest.fixture(scope="module")
def settings_runs(tmp_path_factory) -> dict[str, harness.Run]:
    root = tmp_path_factory.mktemp("settings-fail-closed")
    cases = list(BY_ID.values())
    with harness.ScriptFake() as fake, ThreadPoolExecutor(max_workers=3) as pool:
        runs = list(pool.map(lambda nc: _execute(nc[1], root / f"r{nc[0]:03d}", fake), enumerate(cases)))
    return {run.cases[0]["id"]: run for run in runs}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("settings_case", [c["id"] for c in CASES])
def test_settings_fail_closed(settings_case, settings_runs):
    run = settings_runs[settings_case]
    case = run.cases[0]
    problems = harness.breaches(run, case)
    assert not problems, (f"{settings_case}: " + "; ".join(problems)
                          + f"\n  tool_result: {harness.excerpt(run, case)!r}\n  stderr: {run.stderr[-800:]!r}")
    for needle in case["stderr"]:
        assert harness.fill(needle, case["_values"]) in run.stderr, (settings_case, needle, run.stderr[-1500:])
    if case["expect_exit"]:
        assert "Traceback" not in run.stderr, run.stderr[-800:]
        assert "Nothing was started" in run.stderr or "--disallowedTools" in run.stderr, run.stderr[-800:]


@pytest.mark.needs_sandbox
@pytest.mark.timeout(900)
@pytest.mark.parametrize("settings_case", [c["id"] for c in CONTROLS])
def test_control_removes_the_victim(settings_case, settings_runs):
    run = settings_runs[settings_case]
    case = run.cases[0]
    problems = harness.breaches(run, case)
    assert any("was removed" in p for p in problems), (settings_case, problems, run.stderr[-800:])
    assert not [p for p in problems if "tool_result(s)" in p or "exit code" in p], problems
