"""``permissions.protected``: the one list of protected paths, the decision's use of it (ask in every mode that
asks, acceptEdits and bypass included; our own configuration and trust store denied in every mode) and the
sandbox's (read-only binds, placeholders for missing names, pinned ``.git`` dirs), with the real bubblewrap."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from desktop_agent.core.context import ToolUseContext
from desktop_agent.core.permission import PermissionTarget, ToolFacts
from desktop_agent.permissions import protected
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.decide import decide
from desktop_agent.permissions.sandbox_policy import build_policy
from desktop_agent.permissions.sandbox_settings import SandboxSettings
from desktop_agent.util import placeholders

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")


@pytest.fixture
def home_is_folder(tmp_path, monkeypatch):
    """The person opened their home: HOME, XDG_CONFIG_HOME and our config all inside the folder."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("DESKTOP_AGENT_CONFIG_DIR", raising=False)
    monkeypatch.delenv("DESKTOP_AGENT_DATA_DIR", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    return str(home)


def _decide(folder: str, mode: str, path: str, tool: str = "Write"):
    pc = PermissionContext(folder, mode=mode)
    ctx = ToolUseContext(cwd=folder, permission_context=pc)
    return decide(ctx, ToolFacts(name=tool), PermissionTarget(kind="write", path=path, summary=path),
                  {"file_path": path, "content": "x"})


@pytest.mark.parametrize("rel", [".config/git/config", ".bash_aliases", ".ssh/authorized_keys", ".bashrc",
                                 ".zshenv", ".gitconfig", ".mcp.json", ".claude/settings.local.json",
                                 ".husky/pre-commit", ".githooks/pre-push", "sub/.git/config", ".envrc",
                                 ".local/share/desktop-agent/projects/x.jsonl"])
def test_protected_write_asks_in_every_mode_that_asks(home_is_folder, rel):
    path = os.path.join(home_is_folder, rel)
    assert protected.protected_reason(path)
    for mode in MODES:
        d = _decide(home_is_folder, mode, path)
        if mode in ("dontAsk", "plan"):
            assert d.behavior == "deny", (mode, d)
        else:
            assert d.behavior == "ask" and d.decision_reason.type == "safetyCheck", (mode, d)
            assert d.message == f"Claude requested permissions to edit {path} which is a sensitive file."


@pytest.mark.parametrize("rel", [".config/desktop-agent/trust.json", ".config/desktop-agent/settings.json",
                                 ".config/desktop-agent/credentials.json", ".claude.json"])
def test_own_configuration_and_trust_store_are_denied_in_every_mode(home_is_folder, rel):
    path = os.path.join(home_is_folder, rel)
    for mode in MODES:
        d = _decide(home_is_folder, mode, path, tool="Edit")
        assert d.behavior == "deny", (mode, d)
        assert "own configuration or trust store" in d.message


def test_own_store_denied_through_a_symlink(home_is_folder):
    cfg = os.path.join(home_is_folder, ".config", "desktop-agent")
    os.makedirs(cfg)
    link = os.path.join(home_is_folder, "innocent")
    os.symlink(cfg, link)
    assert _decide(home_is_folder, "bypassPermissions", os.path.join(link, "trust.json")).behavior == "deny"


def test_ordinary_files_stay_unprotected(home_is_folder):
    for rel in ("src/app.ts", ".config/other/x", "notes/.gitkeep", "bashrc"):
        path = os.path.join(home_is_folder, rel)
        assert protected.protected_reason(path) is None, rel
        assert _decide(home_is_folder, "acceptEdits", path).behavior == "allow"


def test_names_fold_case_and_width(tmp_path):
    assert protected.protected_reason(str(tmp_path / ".GIT" / "config"))
    assert protected.protected_reason(str(tmp_path / "\uff0egit" / "config"))


# --------------------------------------------------------------------------------------------------- sandbox

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _git(*args: str, cwd: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def _sandboxed(folder: str, command: str, settings: SandboxSettings | None = None) -> subprocess.CompletedProcess:
    policy = build_policy(PermissionContext(folder), [folder], settings=settings or SandboxSettings())
    argv = ["bwrap", *policy.bwrap_args(), "--chdir", folder, "--", "sh", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


@pytest.fixture
def repo(tmp_path):
    folder = tmp_path / "proj"
    (folder / "sub").mkdir(parents=True)
    _git("init", "-q", ".", cwd=str(folder))
    _git("init", "-q", ".", cwd=str(folder / "sub"))
    (folder / "a.txt").write_text("a\n")
    _git("add", "a.txt", cwd=str(folder))
    _git("commit", "-qm", "a", cwd=str(folder))
    _git("config", "core.hooksPath", ".githooks", cwd=str(folder))  # named, not there yet
    (folder / ".husky").mkdir()
    (folder / ".husky" / "pre-commit").write_text("npm test\n")
    return str(folder)


@needs_bwrap
@pytest.mark.parametrize("command,left", [
    ("echo '[core] fsmonitor = x' >> .git/config", None),
    ("echo '[core] fsmonitor = x' >> sub/.git/config", None),
    ("mv .git moved && echo x >> moved/config", "moved"),
    ("mv sub/.git sub/moved; echo 'gitdir: moved' > sub/.git", "sub/moved"),
    ("mkdir evil && echo '[core]' > evil/config && echo \"$PWD/evil\" > .git/commondir", ".git/commondir"),
    ("echo x > .git/hooks/pre-commit", ".git/hooks/pre-commit"),
    ("echo x >> .husky/pre-commit; echo x > .husky/pre-push", ".husky/pre-push"),
    ("mkdir -p .githooks && echo x > .githooks/pre-commit", ".githooks"),  # core.hooksPath names it
    ("echo '{}' > .mcp.json", ".mcp.json"),
    ("rmdir .mcp.json; echo '{}' > .mcp.json", ".mcp.json"),
    ("mkdir -p .claude && echo '{}' > .claude/settings.local.json", ".claude"),
    ("mv .claude c2; mkdir .claude; echo '{}' > .claude/settings.local.json", ".claude"),
])
def test_sandbox_keeps_protected_paths_read_only(repo, command, left):
    before = open(os.path.join(repo, ".git", "config")).read()
    _sandboxed(repo, command)
    assert open(os.path.join(repo, ".git", "config")).read() == before
    assert open(os.path.join(repo, ".husky", "pre-commit")).read() == "npm test\n"
    assert "fsmonitor" not in open(os.path.join(repo, "sub", ".git", "config")).read()
    placeholders.cleanup_placeholders()
    if left:
        assert not os.path.lexists(os.path.join(repo, left)), os.listdir(repo)


@pytest.mark.needs_sandbox
@needs_bwrap
def test_git_still_works_inside_and_placeholders_are_invisible_and_removed(repo):
    shutil.rmtree(os.path.join(repo, "sub"))
    out = _sandboxed(repo, "echo b > b.txt && git add -A && git -c user.name=t -c user.email=t@t commit -qm b "
                           "&& git status --porcelain && ls -a")
    assert out.returncode == 0, out.stderr
    assert ".mcp.json" in out.stdout and "?? " not in out.stdout  # placeholders exist, git does not see them
    assert os.path.isdir(os.path.join(repo, ".mcp.json"))
    removed = placeholders.cleanup_placeholders()
    assert os.path.join(repo, ".mcp.json") in removed and os.path.join(repo, ".git", "commondir") in removed
    assert sorted(os.listdir(repo)) == [".git", ".husky", "a.txt", "b.txt"]


@needs_bwrap
def test_home_as_folder_keeps_startup_files_and_our_config(home_is_folder):
    with open(os.path.join(home_is_folder, ".bashrc"), "w") as fh:
        fh.write("# mine\n")
    for command in ("echo evil >> ~/.bashrc", "echo evil > ~/.bash_aliases", "mkdir -p ~/.ssh; echo k >> "
                    "~/.ssh/authorized_keys", "mkdir -p ~/.config/git; echo x > ~/.config/git/config",
                    "mkdir -p ~/.config/desktop-agent; echo {} > ~/.config/desktop-agent/trust.json"):
        _sandboxed(home_is_folder, command)
    placeholders.cleanup_placeholders()
    assert open(os.path.join(home_is_folder, ".bashrc")).read() == "# mine\n"
    for rel in (".bash_aliases", ".ssh/authorized_keys", ".config/git/config", ".config/desktop-agent/trust.json"):
        assert not os.path.lexists(os.path.join(home_is_folder, rel)), rel


@pytest.mark.needs_sandbox
@needs_bwrap
def test_folders_holding_protected_paths_cannot_be_renamed(home_is_folder):
    """``mv ~/.config c2`` would carry the read-only ``git`` mount away and let a fresh ``~/.config/git/config``
    be made: the folders between the root and a protected path are mount points too."""
    os.makedirs(os.path.join(home_is_folder, "vendor", "lib"))
    _git("init", "-q", ".", cwd=os.path.join(home_is_folder, "vendor", "lib"))
    out = _sandboxed(home_is_folder, "mv .config c2; mkdir -p .config/git && echo x > .config/git/config; "
                                     "mv vendor v2; echo done")
    assert out.stdout.strip() == "done", out.stderr
    assert "cannot move '.config'" in out.stderr and "cannot move 'vendor'" in out.stderr
    placeholders.cleanup_placeholders()
    names = os.listdir(home_is_folder)
    assert ".config" in names and "vendor" in names and "c2" not in names and "v2" not in names
    assert os.listdir(os.path.join(home_is_folder, ".config")) == []  # the placeholders are gone, nothing planted
    assert os.path.isfile(os.path.join(home_is_folder, "vendor", "lib", ".git", "config"))


@pytest.mark.needs_sandbox
@needs_bwrap
def test_a_path_the_person_allowed_stays_writable(repo):
    husky = os.path.join(repo, ".husky")
    out = _sandboxed(repo, "echo x > .husky/pre-commit", SandboxSettings(allow_write=(husky,)))
    assert out.returncode == 0 and os.path.isfile(os.path.join(husky, "pre-commit")), out.stderr


@pytest.mark.needs_sandbox
@needs_bwrap
def test_a_protected_name_that_is_a_symlink_is_protected_at_its_target(home_is_folder):
    dotfiles = os.path.join(home_is_folder, "dotfiles")
    os.makedirs(dotfiles)
    with open(os.path.join(dotfiles, "bashrc"), "w") as fh:
        fh.write("# mine\n")
    os.symlink(os.path.join(dotfiles, "bashrc"), os.path.join(home_is_folder, ".bashrc"))
    out = _sandboxed(home_is_folder, "echo evil >> ~/.bashrc; echo evil >> dotfiles/bashrc; mv dotfiles d2")
    placeholders.cleanup_placeholders()
    assert open(os.path.join(dotfiles, "bashrc")).read() == "# mine\n", out.stderr
    assert out.stderr.count("Read-only file system") == 2 and "cannot move 'dotfiles'" in out.stderr


@pytest.mark.needs_sandbox
def test_hooks_path_and_included_config_are_read_only(repo):
    with open(os.path.join(repo, ".git", "config"), "a") as fh:
        fh.write('[core]\n\thooksPath = tools/hooks\n[include]\n\tpath = ../local.gitconfig\n'
                 '[submodule "lib"]\n\tpath = lib\n')
    with open(os.path.join(repo, "local.gitconfig"), "w") as fh:
        fh.write("[user]\n\tname = t\n")
    policy = build_policy(PermissionContext(repo), [repo], settings=SandboxSettings())
    assert {os.path.join(repo, "tools", "hooks"), os.path.join(repo, "local.gitconfig")} <= set(policy.read_only)
    assert os.path.join(repo, "lib") not in policy.read_only  # a submodule's path is not an include
    if shutil.which("bwrap"):
        out = _sandboxed(repo, "echo x > tools/hooks/pre-commit; echo '[core] fsmonitor = x' >> local.gitconfig")
        assert out.stderr.count("Read-only file system") == 2, out.stderr
    placeholders.cleanup_placeholders()
    assert not os.path.exists(os.path.join(repo, "tools", "hooks"))
