"""How one shell starts: ``plan_launch`` (argv and environment: bubblewrap around the shell when the sandbox is
active, the private TMPDIR, git neutralised in untrusted folders) and ``BubblewrapSandbox``, the
``core.context.CommandSandbox`` the app sets on the tool-use context (``tools.bash`` spawns every shell through it).
``sandbox.excludedCommands`` run outside the sandbox, but only a plain command line (no shell metacharacters at
all) whose first words are an entry. Every sandboxed shell gets the project's caches (``sandbox_caches``); with a
non-empty ``sandbox.network.allowedDomains`` it starts under ``nsenter`` in the session's network namespace, behind
the session's egress proxy (``permissions.egress``; ``BubblewrapSandbox`` owns it), with the proxy variables. Every
sandboxed shell also gets the socket policy and the command stubs
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
import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from desktop_agent.core.context import ToolUseContext
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.paths import working_dirs
from desktop_agent.permissions.sandbox import probe, sandbox_status, warn_once
from desktop_agent.permissions.sandbox_policy import (SandboxPolicy, add_command_stubs, add_socket_policy,
                                                      build_policy, private_tmpdir)
from desktop_agent.permissions.sandbox_settings import SandboxSettings, load_sandbox_settings
from desktop_agent.permissions.sandbox_stubs import program_of_rule, stub_dir
from desktop_agent.util import dirs
from desktop_agent.util.git_env import git_safety_env

if TYPE_CHECKING:
    from desktop_agent.permissions.egress import EgressProxy, EgressRules

ProxyFor = Callable[[ToolUseContext, SandboxSettings], "EgressProxy | None"]


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

    def release(self) -> None:
        """The shell has exited (or never started): the placeholders made for it go, unless another command binds
        them (``SandboxPolicy.release``). Call it off the UI thread: it touches the disk."""
        if self.policy is not None:
            self.policy.release()


def plan_launch(argv: list[str], cwd: str, env: dict[str, str], ctx: ToolUseContext, *, command: str = "",
                disable_sandbox: bool = False, proxy_for: ProxyFor | None = None) -> LaunchPlan:
    """How to start one shell (``argv`` = ``[shell, "-c", script]``) for ``ctx``: inside bubblewrap when the
    sandbox is active (and not escaped with a yes'd ``dangerouslyDisableSandbox`` or an excluded command), with
    the project's caches (``sandbox_caches``) and, when ``proxy_for`` gives the session's egress proxy (the
    allow list is not empty), in the session's network namespace behind it (``permissions.egress``)."""
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
    try:
        return _finish_plan(policy, argv, cwd, env, pc, settings, proxy_for, ctx)
    except BaseException:
        policy.release()  # no shell will bind its placeholders
        raise


def _finish_plan(policy: SandboxPolicy, argv: list[str], cwd: str, env: dict[str, str],
                 pc: PermissionContext | None, settings: SandboxSettings, proxy_for: ProxyFor | None,
                 ctx: ToolUseContext) -> LaunchPlan:
    # deferred (a cost, not a cycle): the caches and the egress proxy only for a shell the sandbox actually wraps;
    # a session whose sandbox is off (every -p run without sandbox settings) never imports them
    from desktop_agent.permissions.egress import proxy_env, resolv_conf_file
    from desktop_agent.permissions.sandbox_caches import cache_dir, cache_env, read_only_dirs, writable_dirs

    try:
        cache = cache_dir(pc.project_dir if pc is not None else cwd)
    except OSError:
        cache = ""
    if cache:
        policy.caches_ro = read_only_dirs(cache)
        policy.caches = writable_dirs(cache)
        env = cache_env(env, cache, policy.writable)
    prefix: list[str] = []
    proxy = proxy_for(ctx, settings) if proxy_for is not None else None
    if proxy is not None:
        try:
            prefix = proxy.launch_prefix()
            policy.resolv_conf = resolv_conf_file(stub_dir())
        except OSError:
            prefix = []
        if prefix:
            policy.egress = True
            env = proxy_env(env)
    add_socket_policy(policy, env, cwd=cwd, shell=argv[0] if argv else "")
    add_command_stubs(policy, pc, env, argv[0] if argv else "/bin/sh")
    bwrap = probe().bwrap or "bwrap"
    chdir = ["--chdir", cwd] if os.path.isdir(cwd) else []
    return LaunchPlan([*prefix, bwrap, *policy.bwrap_args(), *chdir, "--", *argv], env, True, policy)


class BubblewrapSandbox:
    """The ``CommandSandbox`` of a session: every shell of the Bash tool starts through ``plan_launch``. It owns the
    session's egress proxy (``permissions.egress.EgressProxy``), started on the first shell that needs it, and
    the hosts the person allowed for the session (``allow_host_for_session``). ``close`` (the session's
    ``AgentSession.aclose``, in a worker thread: CLI exit, a window's session end, the host's session close) stops
    the proxy and lets the namespace go; it is idempotent, and a later shell would start a new proxy."""

    def __init__(self) -> None:
        self.egress: EgressProxy | None = None
        self.session_hosts: list[str] = []
        self._lock = threading.Lock()
        self._warned = False

    def private_tmpdir(self) -> str:
        return private_tmpdir()

    def plan_launch(self, argv: list[str], cwd: str, env: dict[str, str], ctx: ToolUseContext, *, command: str = "",
                    disable_sandbox: bool = False) -> LaunchPlan:
        return plan_launch(argv, cwd, env, ctx, command=command, disable_sandbox=disable_sandbox,
                           proxy_for=self.proxy_for)

    def rules(self, settings: SandboxSettings) -> EgressRules:
        from desktop_agent.permissions.egress import EgressRules  # deferred (a cost): see _finish_plan

        rules = EgressRules.from_lists(settings.allowed_domains, settings.denied_domains)
        return rules.with_allowed(self.session_hosts) if self.session_hosts else rules

    def proxy_for(self, ctx: ToolUseContext, settings: SandboxSettings) -> EgressProxy | None:
        """The session's proxy, started, with the rules of now; None when no host is allowed (no network)."""
        rules = self.rules(settings)
        if rules.empty:
            return None
        with self._lock:
            if self.egress is None:
                from desktop_agent.permissions.egress import EgressProxy, log_path_for  # deferred (a cost)

                session = ctx.session_id or "session"
                self.egress = EgressProxy(rules, session_id=session,
                                          log_path=log_path_for(str(dirs.data_dir()), session),
                                          bwrap=probe().bwrap or "bwrap")
            proxy = self.egress
            proxy.set_rules(rules)
            try:
                proxy.start()
            except OSError as exc:  # fail closed: the shell runs with no network at all
                if not self._warned:
                    self._warned = True
                    print(f"desktop-agent: warning: {exc}; sandboxed commands have no network", file=sys.stderr)
                return None
        return proxy

    def allow_host_for_session(self, host: str) -> None:
        """"Allow this host for the session": counts from the next command on (and turns the proxy on)."""
        if host and host not in self.session_hosts:
            self.session_hosts.append(host)

    def close(self) -> None:
        """Stop the session's proxy (joins its threads, closes the namespace's last descriptors). Blocking: call
        it off the UI thread. Safe to call twice or from several threads."""
        with self._lock:
            if self.egress is not None:
                self.egress.close()
                self.egress = None


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
