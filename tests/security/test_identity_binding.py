"""Deny rules bound to the file as well as the name, through the real CLI (class 5 of the second hostile suite).

In bypass (nothing asks, so only the rules stand): a denied folder renamed by a command (``mv config cfg``,
``mv lib lib2``) stays denied under its new name for Read, Edit and Grep; a hard link made before the session to
``.env`` is denied like ``.env``; a hard link to a file outside the folder is not read as a file inside it in
default mode. Each case has its control: the same calls without the deny rule show the secret or write the file.
The symlink swap that races the check is tested on the tools directly in tests/tools/test_identity_race.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import reply, text, tool_use
from tests.test_cli import cli_env, fake, jsonl, run_cli  # noqa: F401

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


RENAME_READ = [
    ("Bash", {"command": "mv config cfg"}),
    ("Read", {"file_path": "{W}/cfg/secrets/k.txt"}),
    ("Grep", {"pattern": "SECRET", "path": "{W}/cfg", "output_mode": "content"}),
    ("Bash", {"command": "mv lib lib2"}),
    ("Read", {"file_path": "{W}/lib2/core/x.ts"}),
    ("Edit", {"file_path": "{W}/lib2/core/x.ts", "old_string": "x = 1", "new_string": "x = 2"}),
    ("Write", {"file_path": "{W}/lib2/core/new.ts", "content": "pwned\n"}),
]


def _fill(calls, workdir):
    return [(n, {k: v.replace("{W}", str(workdir)) for k, v in inp.items()}) for n, inp in calls]


@pytest.mark.parametrize("guarded", [True, False], ids=["denied", "control"])
def test_a_renamed_denied_folder_stays_denied(fake, tree, tmp_path, guarded):
    flags = ["--disallowedTools", "Read(./config/secrets/**)", "Edit(./lib/core/**)"] if guarded else []
    results = run(fake, tree, tmp_path, _fill(RENAME_READ, tree), *flags)
    assert (tree / "cfg" / "secrets" / "k.txt").exists()  # the renames ran (nothing forbids mv)
    leaked = [i for i in (1, 2) if SECRET in shown(results[f"toolu_{i}"])]
    assert (tree / "lib2" / "core" / "x.ts").exists()
    edited = (tree / "lib2" / "core" / "x.ts").read_text() != "export const x = 1\n"
    created = (tree / "lib2" / "core" / "new.ts").exists()
    if guarded:
        assert leaked == [] and not edited and not created, (leaked, edited, created, results)
        assert results["toolu_5"]["is_error"] and results["toolu_6"]["is_error"]
    else:  # the control: without the rules the same calls read and write
        assert leaked == [1, 2] and edited and created


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
