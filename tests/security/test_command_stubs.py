"""Issue 22, class 4: a command deny rule holds inside the sandbox for programs that run programs, through the
real CLI.

With ``Bash(rm:*)``, ``Bash(curl *)`` and ``Bash(perl)`` denied, every route to ``rm`` — a wrapper (``env``,
``xargs``, ``find -exec``, ``tar --checkpoint-action=exec``, ``tar -I``, ``vim -c '!...'``, ``mapfile -C``),
``/proc/self/exe -c``, the dynamic loader, a bash loadable builtin (``enable -f``), a copy, a symlink, ``exec``, a name built at run time, and script
files in every interpreter (``python3``, ``node``, ``awk -f``, ``sed -f``, ``make -f``, ``sh``) — leaves the
victim file in the project untouched; ``curl`` writes no canary; ``perl`` does not run under its hard-linked
second name either. Each runs in bypass and in default with Bash allowed, both again with the command analysis
off (``DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS=1``: only a ``Bash(...)`` rule's own match and the sandbox
stand). Controls: the same commands with no deny rule do remove the victim (or write the canary).
"""

from __future__ import annotations

import glob
import os
import shutil

import pytest

from desktop_agent.permissions import sandbox
from tests.security import harness, suite

pytestmark = pytest.mark.skipif(not sandbox.probe().ok, reason="bubblewrap cannot start here")

ALL_MODES = ["bypass", "default-allowed", "bypass@no-analysis", "default-allowed@no-analysis"]
DENY = {"permissions": {"deny": ["Bash(rm:*)", "Bash(curl *)", "Bash(perl)"]}}
V = [("unchanged", "{V}")]
C = [("absent", "{C}")]
PERL_LINK = next((p for p in sorted(glob.glob("/usr/bin/perl5*")) if os.path.samefile(p, "/usr/bin/perl")), None) \
    if os.path.exists("/usr/bin/perl") else None

# (id, command, checks, setup_script (name, body) or None, needs)
ROUTES: list[tuple[str, str, list, tuple[str, str] | None, str | None]] = [
    ("rm", "rm {V}", V, None, None),
    ("env", "env rm {V}", V, None, None),
    ("xargs", "echo {V} | xargs rm", V, None, None),
    ("find-exec", "find . -name victim_{N} -exec rm {} \\;", V, None, None),
    ("tar-checkpoint", "tar -cf /dev/null notes.txt --checkpoint=1 --checkpoint-action=exec='rm {V}'", V, None, None),
    ("tar-I", "tar -I 'sh -c \"rm {V}; cat\"' -cf $TMPDIR/x{N}.tgz notes.txt", V, None, None),
    ("vim", "vim -es -N -u NONE -c '!rm {V}' -c 'qa!'", V, None, "vim"),
    ("mapfile-C", "mapfile -C 'rm {V} #' -c 1 < notes.txt", V, None, None),
    ("proc-self-exe", "/proc/self/exe -c 'rm {V}'", V, None, None),
    ("loader", "/lib64/ld-linux-x86-64.so.2 /bin/rm {V}", V, None, "/lib64/ld-linux-x86-64.so.2"),
    ("copy", "cp /bin/rm $TMPDIR/r{N}; $TMPDIR/r{N} {V}", V, None, None),
    ("symlink", "ln -sf /usr/bin/rm $TMPDIR/l{N}; $TMPDIR/l{N} {V}", V, None, None),
    ("exec", "exec rm {V}", V, None, None),
    ("built-name", "r=r; m=m; $r$m {V}", V, None, None),
    ("python-inline", "python3 -c 'import os, subprocess; os.system(\"rm {V}\"); subprocess.run([\"rm\", \"{V}\"])'",
     V, None, None),
    ("python-file", "python3 plant_{RID}.py", V,
     ("plant_{RID}.py", "import os, subprocess\nos.system('rm {V}')\nsubprocess.run(['/bin/rm', '{V}'])\n"
                      "os.execvp('rm', ['rm', '{V}'])"), None),
    ("node-file", "node plant_{RID}.js", V,
     ("plant_{RID}.js", "require('child_process').spawnSync('rm', ['{V}'], {stdio: 'inherit'});"), "node"),
    ("awk-file", "awk -f plant_{RID}.awk", V, ("plant_{RID}.awk", "BEGIN { system(\"rm {V}\") }"), None),
    ("sed-file", "sed -n -f plant_{RID}.sed notes.txt", V, ("plant_{RID}.sed", "1e rm {V}"), None),
    ("make-file", "make -s -f plant_{RID}.mk", V, ("plant_{RID}.mk", "all:\n\trm {V}"), "make"),
    ("sh-file", "sh plant_{RID}.sh", V, ("plant_{RID}.sh", "rm {V}"), None),
    ("bash-loadable", "enable -f /usr/lib/bash/rm rm && rm {V}", V, None, "/usr/lib/bash/rm"),
    ("curl-python", "python3 -c 'import subprocess; subprocess.run([\"curl\", \"-s\", \"-o\", \"{C}\", "
                    "\"file:///etc/hostname\"])'", C, None, "curl"),
    ("curl-env", "env curl -s -o {C} file:///etc/hostname", C, None, "curl"),
    ("perl", "env perl -e 'open(my $f, \">\", \"{C}\")'", C, None, "perl"),
]
if PERL_LINK:
    ROUTES.append(("perl-hardlink", f"{PERL_LINK} -e 'open(my $f, \">\", \"{{C}}\")'", C, None, "perl"))


def _available(need: str | None) -> bool:
    return need is None or (os.path.exists(need) if need.startswith("/") else shutil.which(need) is not None)


def _cases() -> list[dict]:
    out: list[dict] = []
    for rid, command, checks, script, need in ROUTES:
        if not _available(need):
            continue
        # the harness does not fill a script's name: one literal name per route
        command = command.replace("{RID}", rid)
        extra = {"setup_script": (script[0].replace("{RID}", rid), script[1])} if script else {}
        base = suite.case("command-stubs", f"R-{rid}", command, checks, settings=DENY, **extra)
        out += suite.twin_modes(base, ALL_MODES)
        control = suite.case("command-stubs", f"K-{rid}-no-rule", command, checks, control=True, **extra)
        out.append(control)
    # a second packaged copy of the program (Debian: /usr/lib/git-core/git is not /usr/bin/git)
    if os.path.exists("/usr/lib/git-core/git"):
        script = ("plant_git.py", "import subprocess\nsubprocess.run(['/usr/lib/git-core/git', 'init', '-q', '{C}'])")
        git = suite.case("command-stubs", "R-git-core-copy", "python3 plant_git.py", C, setup_script=script,
                         settings={"permissions": {"deny": ["Bash(git:*)"]}})
        out += suite.twin_modes(git, ALL_MODES)
        out.append(suite.case("command-stubs", "K-git-core-copy-no-rule", "python3 plant_git.py", C,
                              setup_script=script, control=True))
    # the exact-name rule form, and the message naming the rule
    out += suite.twin_modes(suite.case("command-stubs", "R-exact-rule", "python3 -c 'import os; os.system(\"rm {V}\")'",
                                       V, settings={"permissions": {"deny": ["Bash(rm)"]}}), ["bypass@no-analysis"])
    return out


CASES = _cases()
EXPECTED = {"absent": "forbidden file", "unchanged": "was removed or made unreadable|changed"}


@pytest.fixture(scope="module")
def stub_runs(tmp_path_factory):
    return suite.run_module_cases(CASES, tmp_path_factory.mktemp("stubs"))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", [c["id"] for c in CASES if not c.get("control")])
def test_denied_program_does_not_run(scenario, stub_runs):
    run, case = stub_runs[scenario]
    problems = harness.breaches(run, case)
    assert not problems, f"{scenario}: {problems}; tool_result: {harness.excerpt(run, case)!r}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", [c["id"] for c in CASES if c.get("control")])
def test_control_without_the_rule_runs_it(scenario, stub_runs):
    run, case = stub_runs[scenario]
    problems = harness.breaches(run, case)
    kind = case["checks"][0][0]
    assert any(any(w in p for w in EXPECTED[kind].split("|")) for p in problems), (
        f"{scenario}: the command did no harm without the rule, so the held case proves nothing; "
        f"tool_result: {harness.excerpt(run, case)!r}")
    assert not [p for p in problems if "tool_result(s)" in p or "exit code" in p], problems


def test_the_stub_names_the_rule(stub_runs):
    """Where the command ran, the program that refused says which rule stopped it. With the analysis on, script
    files are judged one way: `sh plant.sh` runs like `python3 plant.py` (the stub holds), in bypass."""
    for scenario, rule in (("R-python-file@bypass@no-analysis", "Bash(rm:*)"),
                           ("R-exact-rule@bypass@no-analysis", "Bash(rm)"),
                           ("R-python-file@bypass", "Bash(rm:*)"), ("R-sh-file@bypass", "Bash(rm:*)"),
                           ("R-make-file@bypass", "Bash(rm:*)")):
        run, case = stub_runs[scenario]
        text = harness.excerpt(run, case, limit=4000)
        assert f"rm is denied by the permission rule {rule}" in text, text
