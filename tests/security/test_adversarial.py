"""Issue 12's proof: every adversarial case of ``tests/security/cases.py`` holds through the real CLI.

One test per case, named by the case id (its class is in the failure message). The ``@no-analysis`` ones run with
the static Bash analysis switched off, so the OS sandbox alone must hold. A case holds when its canary says nothing
forbidden was written, read, listed or run, its tool_use got exactly one tool_result, and the CLI exited as
expected. The failure message names what got through and quotes the tool_result.
"""

from __future__ import annotations

import pytest

from tests.security import harness
from tests.security.cases import all_cases

ADVERSARIAL = [c for c in all_cases() if not c.get("control")]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case_id", [c["id"] for c in ADVERSARIAL])
def test_case_holds(case_id, security_runs):
    run, case = security_runs[case_id]
    problems = harness.breaches(run, case)
    shown = str(case.get("_input", case["input"]))[:200]
    assert not problems, (f"[{case['cls']}] {case_id}: " + "; ".join(problems)
                          + f"\n  input: {shown!r}\n  tool_result: {harness.excerpt(run, case)!r}")
