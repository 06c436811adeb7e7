"""Glob and Grep never show a name or a line from a path a Read deny rule covers (issue 12 item 3).

Owns the deny-filter cases of ``tools/ripgrep.DenyFilter`` through ``run_tool_use`` on real trees:
folder rules (``Read(./secrets/**)``, ``Read(./vault)``), file rules (``Read(./.env)``), the absolute
(``//``), home (``~/``) and project-root (``/``) forms; glob patterns that reach in (``**/*``,
``secrets/*``, ``**/.env``, ``.e*``); Grep for the secret text in every output mode with the counts
and "Found N" lines taken after filtering; a search path that is a parent directory; symlinks into
the denied folder (the resolved target decides); and a search root that is itself denied (the
denied text of SPEC Appendix A). Searches run in bypassPermissions as well as default mode: the
filter is in the tools, not in the mode.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.engine.execution import run_tool_use
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.tools.glob import GlobTool
from desktop_agent.tools.grep import GrepTool

DENIED = "<tool_use_error>File is in a directory that is denied by your permission settings.</tool_use_error>"
SECRET = "SECRET_TOKEN"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """ws/ with allowed files (app.py, sub/.env, notes.md) and denied ones, all holding SECRET_TOKEN."""
    home = tmp_path / "home"
    (home / "keys").mkdir(parents=True)
    (home / "keys" / "id.txt").write_text(f"{SECRET}=home\n")
    monkeypatch.setenv("HOME", str(home))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "creds.txt").write_text(f"{SECRET}=outside\n")
    (outside / "fine.txt").write_text(f"{SECRET}=fine-outside\n")
    ws = tmp_path / "ws"
    for d in ("secrets/sub", "sub", "vault", "private"):
        (ws / d).mkdir(parents=True)
    files = {
        "app.py": f"{SECRET} = read()\n",
        "notes.md": f"see {SECRET}\n{SECRET} again\n",
        "sub/.env": f"{SECRET}=allowed-sub-env\n",
        ".env": f"{SECRET}=root-env\n",
        ".envrc": "no secret here\n",
        "secrets/key.txt": f"{SECRET}=abc\n",
        "secrets/sub/deep.txt": f"{SECRET}=deep\n",
        "secrets/.hidden": f"{SECRET}=hidden\n",
        "vault/v.txt": f"{SECRET}=vault\n",
        "private/p.txt": f"{SECRET}=private\n",
    }
    for rel, body in files.items():
        (ws / rel).write_text(body)
    os.symlink(ws / "secrets", ws / "link_dir")                    # a folder link into the denied folder
    os.symlink(ws / "secrets" / "key.txt", ws / "leak.txt")        # a file link to a denied file
    os.symlink(outside / "creds.txt", ws / "creds_link.txt")       # a file link to a file an // rule denies
    rules = ["Read(./secrets/**)", "Read(./.env)", "Read(./vault)", "Read(/private/**)",
             f"Read(/{outside}/creds.txt)", "Read(~/keys/**)"]
    return ws, outside, home, rules


def context(ws: Path, rules: list[str], mode: str = "default", extra_dirs: tuple[str, ...] = ()) -> ToolUseContext:
    pc = PermissionContext(str(ws), mode=mode, additional_dirs=extra_dirs)
    pc.add_rules(rules, "deny")
    return ToolUseContext(cwd=str(ws), tools=[GlobTool(), GrepTool()], permission_context=pc)


def call(ctx: ToolUseContext, name: str, inp: dict[str, Any]) -> dict[str, Any]:
    out = run(run_tool_use({"type": "tool_use", "id": "toolu_x", "name": name, "input": inp}, ctx))
    assert out.block["tool_use_id"] == "toolu_x"
    return out.block


def leaks(text: str) -> list[str]:
    """Denied names or contents visible in a tool_result."""
    bad = ("secrets", "key.txt", "deep.txt", ".hidden", "root-env", "=abc", "=deep", "vault", "private",
           "creds", "=outside", "id.txt", "=home", "leak.txt", "link_dir")
    lines = [line for line in text.split("\n") if line]
    return [line for line in lines if any(b in line for b in bad) or line in (".env", "./.env")]


# ---------------------------------------------------------------- Glob

@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
@pytest.mark.parametrize("pattern", ["**/*", "*", "**", "secrets/*", "secrets/**", "**/.env", ".e*", ".env",
                                     "**/*.txt", "link_dir/*", "leak.txt", "{secrets,vault}/**", "vault/*",
                                     "private/*", "**/.hidden", "*/*"])
def test_glob_never_lists_a_denied_path(tree, pattern, mode):
    ws, _, _, rules = tree
    block = call(context(ws, rules, mode), "Glob", {"pattern": pattern})
    assert not block.get("is_error"), block
    assert leaks(block["content"]) == [], (pattern, block["content"])


def test_glob_lists_what_is_allowed(tree):
    ws, _, _, rules = tree
    listed = set(call(context(ws, rules), "Glob", {"pattern": "**/*"})["content"].split("\n"))
    assert {"app.py", "notes.md", "sub/.env", ".envrc"} <= listed
    assert call(context(ws, rules), "Glob", {"pattern": "**/.env"})["content"] == "sub/.env"
    # rg's glob without a slash matches a name at any depth: sub/.env is allowed, ./.env is not.
    assert set(call(context(ws, rules), "Glob", {"pattern": ".e*"})["content"].split("\n")) == {".envrc", "sub/.env"}
    assert call(context(ws, rules), "Glob", {"pattern": "secrets/*"})["content"] == "No files found"
    # Without the rules the same patterns do list the files: the filter, not the tree, hides them.
    open_ctx = context(ws, [])
    assert "secrets/key.txt" in call(open_ctx, "Glob", {"pattern": "**/*"})["content"].split("\n")
    assert call(open_ctx, "Glob", {"pattern": ".e*"})["content"].split("\n") == sorted(
        [".env", ".envrc", "sub/.env"], key=lambda p: (os.stat(ws / p).st_mtime, p))


@pytest.mark.parametrize("inp", [
    {"pattern": "*", "path": "secrets"},
    {"pattern": "**/*", "path": "secrets/sub"},
    {"pattern": "*", "path": "link_dir"},   # a link whose target is denied
    {"pattern": "*", "path": "vault"},
    {"pattern": "SELF/secrets/*"},            # an absolute pattern: its literal prefix is the search root
])
def test_glob_in_a_denied_root_is_denied(tree, inp):
    ws, _, _, rules = tree
    inp = {k: v.replace("SELF", str(ws)) for k, v in inp.items()}
    for mode in ("default", "bypassPermissions"):
        block = call(context(ws, rules, mode), "Glob", inp)
        assert block.get("is_error") and block["content"] == DENIED, (inp, mode, block)


def test_glob_from_a_parent_directory_and_absolute_rules(tree):
    ws, outside, home, rules = tree
    parent = str(ws.parent)
    block = call(context(ws, rules, "bypassPermissions"), "Glob", {"pattern": "**/*", "path": parent})
    listed = block["content"].split("\n")
    assert str(ws / "app.py") in listed and str(outside / "fine.txt") in listed
    assert leaks(block["content"]) == [], block["content"]
    block = call(context(ws, rules, "bypassPermissions"), "Glob", {"pattern": f"{outside}/*"})
    assert block["content"] == str(outside / "fine.txt")


# ---------------------------------------------------------------- Grep

@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
@pytest.mark.parametrize("extra", [{}, {"output_mode": "files_with_matches"}, {"output_mode": "content"},
                                   {"output_mode": "count"}, {"output_mode": "content", "-C": 2},
                                   {"output_mode": "content", "-n": False}, {"glob": "**/.env"},
                                   {"glob": ".e*", "output_mode": "content"}, {"glob": "secrets/**"},
                                   {"-i": True, "output_mode": "count"}, {"type": "txt", "output_mode": "content"},
                                   {"head_limit": 0, "output_mode": "content"}, {"multiline": True}])
def test_grep_never_shows_a_denied_file_or_line(tree, extra, mode):
    ws, _, _, rules = tree
    block = call(context(ws, rules, mode), "Grep", {"pattern": SECRET, **extra})
    assert not block.get("is_error"), block
    assert leaks(block["content"]) == [], (extra, block["content"])


def test_grep_counts_reflect_the_filtered_results(tree):
    ws, _, _, rules = tree
    ctx = context(ws, rules)
    files = call(ctx, "Grep", {"pattern": SECRET})["content"].split("\n")
    assert files[0] == "Found 3 files" and sorted(files[1:]) == ["app.py", "notes.md", "sub/.env"]
    count = call(ctx, "Grep", {"pattern": SECRET, "output_mode": "count"})["content"]
    lines, summary = count.split("\n\n")
    assert sorted(lines.split("\n")) == ["app.py:1", "notes.md:2", "sub/.env:1"]
    assert summary == "Found 4 total occurrences across 3 files."
    content = call(ctx, "Grep", {"pattern": SECRET, "output_mode": "content"})["content"].split("\n")
    assert sorted(content) == sorted(["app.py:1:SECRET_TOKEN = read()", "notes.md:1:see SECRET_TOKEN",
                                      "notes.md:2:SECRET_TOKEN again", "sub/.env:1:SECRET_TOKEN=allowed-sub-env"])
    # Only denied files match: "none", not a count of what was hidden.
    assert call(ctx, "Grep", {"pattern": "=abc|=deep|=vault"})["content"] == "No files found"
    assert call(ctx, "Grep", {"pattern": "=abc|=deep", "output_mode": "count"})["content"] == (
        "No matches found\n\nFound 0 total occurrences across 0 files.")
    assert call(ctx, "Grep", {"pattern": "root-env", "output_mode": "content"})["content"] == "No matches found"
    # A page of one file starts after the hidden ones: offset/head_limit count only what is shown.
    page = call(ctx, "Grep", {"pattern": SECRET, "head_limit": 1, "offset": 2})["content"]
    assert page.split("\n")[0] == "Found 1 file" and leaks(page) == []


@pytest.mark.parametrize("path", ["secrets", "secrets/key.txt", "secrets/sub", "link_dir", "leak.txt", ".env",
                                  "vault", "vault/v.txt", "private", "creds_link.txt", "~/keys", "OUTSIDE/creds.txt"])
def test_grep_in_a_denied_path_is_denied(tree, path):
    ws, outside, _, rules = tree
    path = path.replace("OUTSIDE", str(outside))
    for mode in ("default", "bypassPermissions"):
        for out_mode in ("files_with_matches", "content", "count"):
            block = call(context(ws, rules, mode), "Grep", {"pattern": SECRET, "path": path, "output_mode": out_mode})
            assert block.get("is_error") and block["content"] == DENIED, (path, mode, out_mode, block)


@pytest.mark.parametrize("out_mode", ["files_with_matches", "content", "count"])
def test_grep_from_a_parent_directory(tree, out_mode):
    """path = the workspace's parent (and the filesystem's home): the rules still hold below it."""
    ws, outside, home, rules = tree
    ctx = context(ws, rules, "bypassPermissions")
    block = call(ctx, "Grep", {"pattern": SECRET, "path": str(ws.parent), "output_mode": out_mode, "head_limit": 0})
    assert not block.get("is_error"), block
    text = block["content"]
    assert leaks(text) == [], text
    assert str(ws / "app.py") in text and str(outside / "fine.txt") in text and str(ws / "sub" / ".env") in text
    block = call(ctx, "Grep", {"pattern": SECRET, "path": "..", "output_mode": out_mode})
    assert leaks(block["content"]) == [], block["content"]


def test_symlinks_into_the_denied_folder_are_resolved(tree):
    """A link inside the workspace that points into secrets/ is denied by its target, in Glob and Grep,
    even when rg is told to follow links (a glob naming it directly)."""
    ws, _, _, rules = tree
    (ws / "deep_link").mkdir()
    os.symlink(ws / "secrets" / "sub", ws / "deep_link" / "inner")
    ctx = context(ws, rules, "bypassPermissions")
    for pattern in ("deep_link/**", "deep_link/inner/*", "**/deep.txt", "leak.txt", "creds_link.txt"):
        assert leaks(call(ctx, "Glob", {"pattern": pattern})["content"]) == [], pattern
    for inp in ({"glob": "leak.txt"}, {"glob": "creds_link.txt"}, {"path": "deep_link"},
                {"path": "deep_link", "output_mode": "content"}):
        block = call(ctx, "Grep", {"pattern": SECRET, **inp})
        assert leaks(block["content"]) == [] and "=abc" not in block["content"], (inp, block)
    with pytest.raises(AssertionError):  # the check itself is live: the same text without rules leaks
        assert leaks(call(context(ws, []), "Grep", {"pattern": SECRET, "path": "secrets"})["content"]) == []


def test_deny_filter_unit(tree):
    """``DenyFilter`` directly: relative and absolute result paths, a denied parent dir, a link's target."""
    from desktop_agent.tools.ripgrep import DenyFilter

    ws, outside, home, rules = tree
    ctx = context(ws, rules)
    f = DenyFilter.for_search(ctx, str(ws))
    assert f is not None
    for path in ("secrets/key.txt", "secrets/sub/deep.txt", ".env", "vault/v.txt", "private/p.txt", "leak.txt",
                 "link_dir/key.txt", "creds_link.txt", str(outside / "creds.txt"), str(home / "keys" / "id.txt")):
        assert f.denied(path), path
    for path in ("app.py", "sub/.env", ".envrc", str(outside / "fine.txt"), "notes.md"):
        assert not f.denied(path), path
    assert DenyFilter.for_search(context(ws, []), str(ws)) is None  # no Read deny rule: no filter at all


@pytest.mark.parametrize("out_mode", ["content", "files_with_matches", "count"])
def test_a_newline_in_a_name_cannot_split_a_denied_path(tmp_path, out_mode):
    """Adversarial: rg prints one path per line, so ``secrets/a\\nb`` once reached the filter as ``secrets/a``
    and ``b`` (neither denied) and its line was shown, in a search outside the cwd (no rule globs there) or
    under a search root whose own name holds a newline. The canary text must never come back."""
    ws, extra = tmp_path / "ws", tmp_path / "extra"
    ws.mkdir()
    (extra / "secrets").mkdir(parents=True)
    (extra / "secrets" / "a\nb").write_text("CANARY_9f3=1\n")
    (extra / "top\ndir" / "secrets").mkdir(parents=True)
    (extra / "top\ndir" / "secrets" / "k").write_text("CANARY_9f3=2\n")
    (extra / "fine.txt").write_text("CANARY_9f3=fine\n")
    rules = [f"Read(/{extra}/secrets/**)", f"Read(/{extra}/top\ndir/secrets/**)"]
    for mode in ("default", "bypassPermissions"):
        ctx = context(ws, rules, mode, extra_dirs=(str(extra),))
        for path in (str(extra), str(extra / "top\ndir")):
            text = call(ctx, "Grep", {"pattern": "CANARY_9f3", "path": path, "output_mode": out_mode})["content"]
            assert "=1" not in text and "=2" not in text and "a\nb" not in text and "\nb" not in text, (path, text)
        listed = call(ctx, "Glob", {"pattern": "**/*", "path": str(extra)})["content"]
        assert "a\nb" not in listed and "\nb" not in listed and "/k" not in listed, listed
    ctx = context(ws, rules, extra_dirs=(str(extra),))
    text = call(ctx, "Grep", {"pattern": "CANARY_9f3", "path": str(extra), "output_mode": "content"})["content"]
    assert "=fine" in text  # what no rule covers is still found
