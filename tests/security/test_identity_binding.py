"""Deny rules bound to the file as well as the name, through the real CLI (class 5 of the second hostile suite).

In bypass (nothing asks, so only the rules stand): a denied folder renamed by a command (``mv config cfg``,
``mv lib lib2``) stays denied under its new name for Read, Edit and Grep; a hard link made before the session to
``.env`` is denied like ``.env``; a hard link to a file outside the folder is not read as a file inside it in
default mode. Each case has its control: the same calls without the deny rule show the secret or write the file.
Inside the sandbox the folders above denied paths are pinned, so a command cannot rename them at all.
The symlink swap that races the check is tested on the tools directly in tests/security/test_identity_race.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import cli_env, fake, jsonl, run_cli, start, tool_results  # noqa: F401

SECRET = "SECRET-IDENTITY-4e1d"


def run(fake, workdir, tmp_path, calls, *flags, mode="bypassPermissions"):
    fake.script([reply(tool_use(name, inp, id=f"toolu_{i}")) for i, (name, inp) in enumerate(calls)]
                + [reply(text("done"))])
    out = run_cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--permission-mode", mode, *flags],
                  workdir, cli_env(fake, tmp_path / "h"), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = jsonl(out.stdout)
    fake.assert_done()
    return {b["tool_use_id"]: b for m in lines if m.get("type") == "user" for b in m["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"}


def shown(result) -> str:
    return json.dumps(result.get("content"))


@pytest.fixture
def tree(workdir):
    (workdir / "config" / "secrets").mkdir(parents=True)
    (workdir / "config" / "secrets" / "k.txt").write_text(SECRET + "\n")
    (workdir / "lib" / "core").mkdir(parents=True)
    (workdir / "lib" / "core" / "x.ts").write_text("export const x = 1\n")
    (workdir / ".env").write_text(f"TOKEN={SECRET}\n")
    return workdir


RENAMED_CALLS = [
    ("Read", {"file_path": "{W}/cfg/secrets/k.txt"}),
    ("Grep", {"pattern": "SECRET", "path": "{W}/cfg", "output_mode": "content"}),
    ("Read", {"file_path": "{W}/lib2/core/x.ts"}),
    ("Edit", {"file_path": "{W}/lib2/core/x.ts", "old_string": "x = 1", "new_string": "x = 2"}),
    ("Write", {"file_path": "{W}/lib2/core/new.ts", "content": "pwned\n"}),
]


def _fill(calls, workdir):
    return [(n, {k: v.replace("{W}", str(workdir)) for k, v in inp.items()}) for n, inp in calls]


@pytest.mark.parametrize("guarded", [True, False], ids=["denied", "control"])
def test_a_denied_folder_renamed_during_the_session_stays_denied(fake, tree, tmp_path, guarded):
    """The folders are renamed from outside (the person, another tool) after the session started and before the
    model's calls: the rules were bound to the files when the session was built."""
    calls = _fill(RENAMED_CALLS, tree)
    fake.script([reply(text("ready"))] + [reply(tool_use(n, inp, id=f"toolu_{i}")) for i, (n, inp) in enumerate(calls)]
                + [reply(text("done"))])
    flags = ["--disallowedTools", "Read(./config/secrets/**)", "Edit(./lib/core/**)"] if guarded else []
    d = start(fake, tree, tmp_path, "--permission-mode", "bypassPermissions", *flags)
    try:
        d.user("first")
        assert d.result()["subtype"] == "success"
        os.rename(tree / "config", tree / "cfg")
        os.rename(tree / "lib", tree / "lib2")
        d.user("second")
        assert d.result()["subtype"] == "success"
        results = {f"toolu_{i}": tool_results(d, f"toolu_{i}")[0] for i in range(len(calls))}
    finally:
        assert d.close() == 0
    leaked = [i for i in (0, 1) if SECRET in shown(results[f"toolu_{i}"])]
    edited = (tree / "lib2" / "core" / "x.ts").read_text() != "export const x = 1\n"
    created = (tree / "lib2" / "core" / "new.ts").exists()
    if guarded:
        assert leaked == [] and not edited and not created, (leaked, edited, created, results)
        assert results["toolu_3"]["is_error"] and results["toolu_4"]["is_error"]
    else:  # the control: without the rules the same calls read and write
        assert leaked == [0, 1] and edited and created


@pytest.mark.parametrize("guarded", [True, False], ids=["denied", "control"])
def test_a_hard_link_to_a_denied_file_is_denied(fake, tree, tmp_path, guarded):
    os.link(tree / ".env", tree / "h.txt")  # made before the session
    flags = ["--disallowedTools", "Read(./.env)"] if guarded else []
    calls = [("Read", {"file_path": str(tree / "h.txt")}),
             ("Grep", {"pattern": "TOKEN", "path": str(tree), "output_mode": "content"}),
             ("Bash", {"command": "cat h.txt"})]
    results = run(fake, tree, tmp_path, calls, *flags)
    if guarded:
        assert results["toolu_0"]["is_error"] and SECRET not in shown(results["toolu_0"])
        assert SECRET not in shown(results["toolu_1"])
    else:
        assert SECRET in shown(results["toolu_0"]) and SECRET in shown(results["toolu_1"])


def test_a_hard_link_to_a_file_outside_is_not_inside_the_folder(fake, tree, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text(SECRET + "\n")
    os.link(outside / "id_rsa", tree / "key.txt")
    (tree / "plain.txt").write_text("plain\n")
    calls = [("Read", {"file_path": str(tree / "key.txt")}), ("Read", {"file_path": str(tree / "plain.txt")})]
    results = run(fake, tree, tmp_path, calls, mode="default")  # headless default: what would ask is denied
    assert results["toolu_0"]["is_error"] and SECRET not in shown(results["toolu_0"])
    assert "plain" in shown(results["toolu_1"])  # the control: a file with one name inside is read


def test_the_binding_is_taken_before_the_first_command(fake, tree, tmp_path):
    """The rename is the first thing the model does: the identity was captured when the session was built."""
    calls = [("Bash", {"command": "mv config cfg && ln -s cfg config2"}),
             ("Read", {"file_path": str(tree / "cfg" / "secrets" / "k.txt")}),
             ("Read", {"file_path": str(tree / "config2" / "secrets" / "k.txt")})]
    results = run(fake, tree, tmp_path, calls, "--disallowedTools", "Read(./config/secrets)")
    assert all(SECRET not in shown(results[f"toolu_{i}"]) for i in (1, 2)), results


@pytest.mark.needs_sandbox
@pytest.mark.parametrize("skip_analysis", [False, True], ids=["analysis", "sandbox-only"])
@pytest.mark.parametrize("guarded", [True, False], ids=["denied", "control"])
def test_a_denied_folder_renamed_by_a_command_is_not_read_by_the_next(fake, tree, tmp_path, monkeypatch, guarded,
                                                                      skip_analysis):
    """Inside the sandbox the folders above a denied path are pinned (mount points cannot be renamed), so the
    next command — whose masks are made from the names — cannot find the denied folder under a new name."""
    if skip_analysis:
        monkeypatch.setenv("DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS", "1")
    flags = ["--disallowedTools", "Read(./config/secrets/**)"] if guarded else []
    flags += ["--disallowedTools", "Edit(./lib/core/x.ts)"] if guarded else []
    calls = [("Bash", {"command": "mv config cfg; mv config/secrets s2; mv lib l2; mv lib/core c2; ls"}),
             ("Bash", {"command": "cat cfg/secrets/k.txt s2/k.txt config/secrets/k.txt 2>&1; "
                                  "mkdir -p lib/core; echo pwned > lib/core/x.ts; true"})]
    results = run(fake, tree, tmp_path, calls, *flags)
    if guarded:
        assert SECRET not in shown(results["toolu_1"]), results
        assert (tree / "lib" / "core" / "x.ts").read_text() == "export const x = 1\n", results
    else:
        # the control: the renames ran, the secret was read under the new name, the rule's name was re-created
        assert SECRET in shown(results["toolu_1"]) and (tree / "l2" / "core" / "x.ts").exists()
        assert (tree / "lib" / "core" / "x.ts").read_text() == "pwned\n"
