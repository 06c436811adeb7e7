"""The system prompt: main text, environment block with git summary, memory files in order."""

from __future__ import annotations

import datetime as dt
import os
import subprocess

from desktop_agent.app.system_prompt import build_system_prompt, find_memory_files
from tests.model.aio import aio


def _texts(blocks):
    return [b["text"] for b in blocks]


@aio
async def test_default_prompt_environment_and_no_git(tmp_path):
    blocks = await build_system_prompt(str(tmp_path), model="claude-sonnet-4-6", today=dt.date(2026, 11, 30))
    main, env = _texts(blocks)
    assert main.startswith("You are Desktop Agent") and "Read a file before you Edit" in main
    assert f"Working directory: {tmp_path}" in env and "Is directory a git repo: No" in env
    assert "Today's date: 2026-11-30" in env and "claude-sonnet-4-6" in env and "gitStatus" not in env
    assert all(b["type"] == "text" for b in blocks)


@aio
async def test_git_summary(tmp_path):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}
    run = lambda *a: subprocess.run(["git", *a], cwd=tmp_path, env=env, check=True, capture_output=True)
    run("init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("a")
    run("add", "a.txt")
    run("commit", "-q", "-m", "first commit")
    (tmp_path / "b.txt").write_text("b")
    blocks = await build_system_prompt(str(tmp_path))
    env_text = blocks[1]["text"]
    assert "Is directory a git repo: Yes" in env_text and "Current branch: trunk" in env_text
    assert "?? b.txt" in env_text and "first commit" in env_text


def test_memory_files_order_and_imports(tmp_path, monkeypatch):
    home_claude = tmp_path / "home" / ".claude"
    home_claude.mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home_claude))
    (home_claude / "CLAUDE.md").write_text("user rule")
    project = tmp_path / "proj"
    sub = project / "pkg"
    sub.mkdir(parents=True)
    (project / "CLAUDE.md").write_text("project rule\n@docs/style.md")
    (project / "docs").mkdir()
    (project / "docs" / "style.md").write_text("imported style rule")
    (project / "AGENTS.md").write_text("agents rule")
    (project / "CLAUDE.local.md").write_text("local rule")
    (sub / "CLAUDE.md").write_text("sub rule")
    files = find_memory_files(str(sub))
    assert [(os.path.relpath(f.path, tmp_path), f.kind) for f in files] == [
        ("home/.claude/CLAUDE.md", "user"), ("proj/CLAUDE.md", "project"), ("proj/AGENTS.md", "project"),
        ("proj/CLAUDE.local.md", "local"), ("proj/pkg/CLAUDE.md", "project")]
    assert files[1].content == "project rule\nimported style rule"


@aio
async def test_custom_and_appended_prompt_with_memory_block(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Always use tabs.")
    blocks = await build_system_prompt(str(tmp_path), custom_prompt="Custom identity.", append_prompt="Extra.",
                                       include_git=False)
    texts = _texts(blocks)
    assert texts[0] == "Custom identity." and texts[1] == "Extra."
    assert texts[-1].startswith("Codebase and user instructions are shown below.")
    assert f"Contents of {tmp_path / 'CLAUDE.md'} (project instructions, checked into the codebase):" in texts[-1]
    assert "Always use tabs." in texts[-1]
    empty = await build_system_prompt(str(tmp_path), custom_prompt="", include_git=False, include_memory=False)
    assert len(empty) == 1 and empty[0]["text"].startswith("Here is useful information about the environment")
