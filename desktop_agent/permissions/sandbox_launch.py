"""How one shell starts: ``plan_launch`` (argv and environment: bubblewrap around the shell when the sandbox is
active, the private TMPDIR, git neutralised in untrusted folders) and ``BubblewrapSandbox``, the
``core.context.CommandSandbox`` the app sets on the tool-use context (``tools.bash`` spawns every shell through it).
``sandbox.excludedCommands`` run outside the sandbox, but only a plain command line (no shell metacharacters at
all) whose first words are an entry. Every sandboxed shell also gets the socket policy and the command stubs
(``sandbox_policy.add_socket_policy`` / ``add_command_stubs``); ``command_rules_held`` tells the Bash decision
when those stubs hold every deny rule (then a script file is judged as the command it is).

Git in untrusted folders (``git_safety_env``): repository config can start programs. The shell gets
``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` overrides (command scope: they win over
``.git/config`` and its includes): ``core.fsmonitor=false``, ``core.hooksPath=/dev/null``,
``core.pager=cat`` (+ ``GIT_PAGER=cat``), ``diff.external`` replaced by a plain ``diff -u`` (an empty value
makes git fail), ``core.sshCommand=ssh``, ``gpg.program``/``gpg.ssh.program``/``gpg.x509.program`` the
defaults, ``credential.helper=`` (resets the list), ``core.editor``/``sequence.editor`` ``true``,
``core.askPass=``, ``core.gitProxy=none``, ``protocol.ext.allow=never``. Drivers with user-chosen names
(``filter.<x>.clean/smudge/process``, ``diff.<x>.textconv``, ``merge.<x>.driver``, ``pager.<cmd>`` when
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.paths import working_dirs
from desktop_agent.permissions.sandbox import probe, sandbox_status, warn_once
from desktop_agent.permissions.sandbox_policy import (SandboxPolicy, add_command_stubs, add_socket_policy,
                                                      build_policy, private_tmpdir)
from desktop_agent.permissions.sandbox_settings import SandboxSettings, load_sandbox_settings
from desktop_agent.permissions.sandbox_stubs import program_of_rule
from desktop_agent.util.git_env import git_safety_env


_PLAIN_COMMAND = re.compile(r"^[A-Za-z0-9_./:=@%+,\- ]+$")


def is_excluded_command(command: str, settings: SandboxSettings) -> bool:
    """A ``sandbox.excludedCommands`` entry, for a plain command line only (no shell syntax at all)."""
    text = command.strip()
    if not settings.excluded_commands or not text or not _PLAIN_COMMAND.match(text):
        return False
    for entry in settings.excluded_commands:
        e = re.sub(r"(?::\*|\s\*|\*)$", "", entry).strip()
        if e and (text == e or text.startswith(e + " ")):
            return True
    return False


@dataclass
class LaunchPlan:
    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    policy: SandboxPolicy | None = None


def plan_launch(argv: list[str], cwd: str, env: dict[str, str], ctx: ToolUseContext, *, command: str = "",
                disable_sandbox: bool = False) -> LaunchPlan:
    """How to start one shell (``argv`` = ``[shell, "-c", script]``) for ``ctx``: inside bubblewrap when the
    sandbox is active (and not escaped with a yes'd ``dangerouslyDisableSandbox`` or an excluded command)."""
    pc = ctx.permission_context if isinstance(ctx.permission_context, PermissionContext) else None
    env = dict(env)
    if pc is None or not pc.trusted:
        env = git_safety_env(env)
    tmp = private_tmpdir()
    env["TMPDIR"] = env["TMP"] = env["TEMP"] = tmp
    status = sandbox_status(pc)
    if status.state == "unavailable":
        warn_once(pc)
    settings = load_sandbox_settings(pc)
    if status.state != "active" or (disable_sandbox and settings.allow_unsandboxed_commands) \
            or is_excluded_command(command, settings):
        return LaunchPlan(list(argv), env, False)
    policy = build_policy(pc, working_dirs(ctx), tmpdir=tmp, settings=settings)
    add_socket_policy(policy, env, cwd=cwd, shell=argv[0] if argv else "")
    add_command_stubs(policy, pc, env, argv[0] if argv else "/bin/sh")
    bwrap = probe().bwrap or "bwrap"
    chdir = ["--chdir", cwd] if os.path.isdir(cwd) else []
    return LaunchPlan([bwrap, *policy.bwrap_args(), *chdir, "--", *argv], env, True, policy)


class BubblewrapSandbox:
    """The ``CommandSandbox`` of a session: every shell of the Bash tool starts through ``plan_launch``."""

    def private_tmpdir(self) -> str:
        return private_tmpdir()

    def plan_launch(self, argv: list[str], cwd: str, env: dict[str, str], ctx: ToolUseContext, *, command: str = "",
                    disable_sandbox: bool = False) -> LaunchPlan:
        return plan_launch(argv, cwd, env, ctx, command=command, disable_sandbox=disable_sandbox)


# Names a stub cannot hold: bash builtins (they run inside the shell), shells (the sandbox starts one), multi-call
# binaries (``busybox rm`` is rm under another name).
SHELL_BUILTINS = frozenset("""alias bg bind break builtin caller cd command compgen complete compopt continue declare
dirs disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout mapfile
popd printf pushd pwd read readarray readonly return set shift shopt source suspend test times trap true type typeset
ulimit umask unalias unset wait [ . :""".split())
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "toybox"})


def command_rules_held(pc: PermissionContext | None, input: dict, ctx: ToolUseContext) -> bool:
    """Does the sandbox hold every ``Bash(...)`` deny rule for this call, so that what a script or a name built at
    run time runs need not be known? True when this call runs sandboxed (active, not escaped, not an excluded
    command) and every deny rule names a whole program a stub replaces (``sandbox_stubs``) — not a builtin, not a
    shell, with no multi-call binary on the machine."""
    if pc is None or ctx.sandbox is None or sandbox_status(pc).state != "active":
        return False
    settings = load_sandbox_settings(pc)
    if (input.get("dangerouslyDisableSandbox") and settings.allow_unsandboxed_commands) \
            or is_excluded_command(str(input.get("command", "")), settings):
        return False
    rules = pc.content_rules("deny", "Bash")
    if not rules or shutil.which("busybox") or shutil.which("toybox"):
        return False
    for rule in rules:
        name = program_of_rule(rule.content or "")
        if name is None or name in SHELL_BUILTINS or name in SHELLS:
            return False
    return True
