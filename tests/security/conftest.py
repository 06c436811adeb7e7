"""Session fixtures of the security suite: one fake model for every CLI run, and all the selected runs done once.

``security_runs`` looks at the collected test items, groups the selected cases into CLI runs
(``harness.group_runs``), runs them three at a time against one ``ScriptFake`` and maps each case id to its run.
The wall time and a per-class tally land in ``<basetemp>/security-report.json`` and on the terminal summary.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.security import harness
from tests.security.cases import all_cases

CASES_BY_ID = {c["id"]: c for c in all_cases()}
_REPORT: dict[str, Any] = {}


@pytest.fixture(scope="session")
def security_runs(request, tmp_path_factory) -> dict[str, tuple[harness.Run, dict[str, Any]]]:
    wanted: list[str] = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "case_id" in callspec.params:
            wanted.append(callspec.params["case_id"])
    cases = [CASES_BY_ID[i] for i in dict.fromkeys(wanted)]
    runs = harness.group_runs(cases)
    root = tmp_path_factory.mktemp("security")
    workers = int(os.environ.get("SECURITY_WORKERS") or 3)
    with harness.ScriptFake() as fake:
        wall = harness.execute_all(runs, root, fake, workers=workers)
    by_id = {case["id"]: (run, case) for run in runs for case in run.cases}
    _REPORT.update(wall_s=round(wall, 1), runs=len(runs), cases=len(cases), workers=workers,
                   slowest=sorted(((round(r.seconds, 2), len(r.cases), r.cases[0]["id"]) for r in runs),
                                  reverse=True)[:5])
    tally: dict[str, list[int]] = {}
    broke: dict[str, list[str]] = {}
    for run in runs:
        for case in run.cases:
            key = case["cls"] + ("@no-analysis" if case.get("no_analysis") else "")
            held = not harness.breaches(run, case)
            tally.setdefault(key, [0, 0])[0 if held else 1] += 1
            if not held and not case.get("control"):
                broke.setdefault(key, []).append(case["id"])
    _REPORT["held/broke"] = {k: f"{v[0]} held, {v[1]} broke" for k, v in sorted(tally.items())}
    _REPORT["broke"] = broke
    (root / "security-report.json").write_text(json.dumps(_REPORT, indent=1))
    return by_id


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.write_sep("-", "security suite")
        terminalreporter.write_line(json.dumps(_REPORT, indent=1))
