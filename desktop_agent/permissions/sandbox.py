"""The Bash tool's operating-system sandbox (Linux, bubblewrap): whether it can start, and its word on the static
analysis' decision. The name the window imports for its banner (``sandbox_warning``).

Owns the test-only environment switches, the availability probe (``probe``), ``sandbox_status()`` /
``sandbox_warning()`` / ``warn_once()`` (the text the window and stderr show when the sandbox cannot start), and
``gate_decision`` (how ``permissions.bash.bash_decision`` turns the static analysis' decision into the final one).
The settings ``sandbox`` block is ``sandbox_settings``; what a sandboxed shell may write, read and reach, and the
bubblewrap flags for it, is ``sandbox_policy``; how one shell is started (``BubblewrapSandbox``, the
``core.context.CommandSandbox`` the app puts on the context) is ``sandbox_launch``.

Why bubblewrap and not Landlock (measured on this machine, kernel 6.18, Landlock ABI 7; 50 runs each):
``bash -c true`` plain 1.3-1.4 ms; under Landlock via a ctypes ``preexec_fn`` 2.8 ms (the cost is the
fork-without-vfork a preexec forces); under bubblewrap with the flags of ``sandbox_policy`` 5-7 ms (see
bench/bench_sandbox.py for the figure of the current build). Both are far below the 15 ms budget, so
the choice is by what each can express: Landlock rules only *add* access beneath a directory, so it cannot
make ``.git/hooks`` read-only inside a writable working directory, nor hide ``.env`` inside a readable tree
(that needs every sibling listed, and misses files created later), and it restricts only TCP
bind/connect (no UDP, no abstract Unix sockets). A ``preexec_fn`` is also unsafe in a process with threads
(the window has Qt's). bubblewrap does all of it with mounts and namespaces.

Availability: the first use probes ``bwrap`` with the real flags (``bwrap ... true``), once per process.
When it cannot start (not installed, no user namespaces), ``sandbox_warning()`` returns a sentence for the
window, stderr gets it once, and every Bash command that is not proven read-only **asks**, in every mode
(bypassPermissions and acceptEdits too; dontAsk and headless runs without a prompter turn the ask into a
deny). ``sandbox.failIfUnavailable`` (or ``DESKTOP_AGENT_SANDBOX=on``) denies instead of asking.
A command with ``dangerouslyDisableSandbox: true`` always asks (in every mode) and runs outside the
sandbox only after a yes; ``sandbox.allowUnsandboxedCommands: false`` ignores the flag (the command runs
sandboxed under the usual rules). ``sandbox.excludedCommands`` run outside the sandbox under the usual rules,
but only a plain command line (no shell metacharacters at all) whose first words are an entry.
``sandbox.enabled: false`` turns the sandbox off (no forced asks; the static analysis alone decides) unless
it comes from the project's own settings in an untrusted folder. Settings a folder could use to loosen the
sandbox (``enabled: false``, ``excludedCommands``, ``network.allowedDomains``, ``filesystem.allowWrite``)
count from ``.claude/settings*.json`` only once the folder is trusted; tightening ones always count.
``sandbox.network.allowedDomains`` / ``deniedDomains`` are the egress proxy's rules (``permissions.egress``;
an empty list: no network). Settings keys not listed here (``autoAllowBashIfSandboxed``, proxy ports, Unix
sockets...) are ignored.

Test-only switches (environment):
- ``DESKTOP_AGENT_SANDBOX=off|on|auto`` (default ``auto``: on when bubblewrap starts). ``off`` runs every
  command unsandboxed with the static analysis alone (no forced asks); ``on`` requires the sandbox (when it
  cannot start, non-read-only commands are denied).
- ``DESKTOP_AGENT_BWRAP=PATH``: the bubblewrap binary (a missing path simulates an unavailable sandbox).
- ``DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS=1``: ``bash_decision`` replaces the static analysis'
  result by "allow" unless a ``Bash(...)`` deny (or ask) rule matched — as bypass mode would; findings from
  Read/Edit path rules are dropped too — so the sandbox alone is tested. Never set it outside tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Any, Literal

from desktop_agent.core.permission import DecisionReason, PermissionDecision
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.sandbox_policy import base_flags
from desktop_agent.permissions.sandbox_settings import load_sandbox_settings

MODE_ENV = "DESKTOP_AGENT_SANDBOX"
BWRAP_ENV = "DESKTOP_AGENT_BWRAP"
SKIP_ANALYSIS_ENV = "DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS"
PROBE_TIMEOUT_S = 10.0

Mode = Literal["off", "on", "auto"]


def requested_mode() -> Mode:
    value = (os.environ.get(MODE_ENV) or "auto").strip().lower()
    if value in ("off", "0", "false", "no"):
        return "off"
    if value in ("on", "1", "true", "yes", "require"):
        return "on"
    return "auto"


def skip_analysis_requested() -> bool:
    return (os.environ.get(SKIP_ANALYSIS_ENV) or "").strip().lower() in ("1", "true", "yes", "on")


# --------------------------------------------------------------------------------------------------- probe


@dataclass(frozen=True)
class Probe:
    ok: bool
    bwrap: str | None
    detail: str = ""


_probe_cache: dict[str, Probe] = {}
_probe_lock = threading.Lock()


def bwrap_path() -> str | None:
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override if os.access(override, os.X_OK) else None
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None


def probe() -> Probe:
    """Does bubblewrap start here, with the flags we use? Cached per process (per binary)."""
    path = bwrap_path()
    key = path or f"<missing {os.environ.get(BWRAP_ENV) or 'bwrap'}>"
    with _probe_lock:
        hit = _probe_cache.get(key)
        if hit is not None:
            return hit
        if path is None:
            where = os.environ.get(BWRAP_ENV)
            result = Probe(False, None, f"bubblewrap is not installed ({where} not found)" if where else
                           "bubblewrap (bwrap) is not installed")
        else:
            try:
                proc = subprocess.run([path, *base_flags(False), "--", "true"], stdin=subprocess.DEVNULL,
                                      capture_output=True, timeout=PROBE_TIMEOUT_S)
                detail = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or [""])[-1]
                result = Probe(proc.returncode == 0, path,
                               "" if proc.returncode == 0 else f"{path} failed: {detail or f'exit {proc.returncode}'}")
            except (OSError, subprocess.SubprocessError) as exc:
                result = Probe(False, path, f"{path} could not run: {exc}")
        _probe_cache[key] = result
        return result


def reset_probe() -> None:
    """Forget the probe results and the stderr warning (tests)."""
    global _warned
    with _probe_lock:
        _probe_cache.clear()
    _warned = False


# --------------------------------------------------------------------------------------------------- status


@dataclass(frozen=True)
class SandboxStatus:
    state: Literal["active", "unavailable", "disabled"]
    message: str
    fail_closed: bool = False  # unavailable and required: deny instead of ask


def sandbox_status(pc: PermissionContext | None = None) -> SandboxStatus:
    """Is the shell sandboxed? ``active``; ``disabled`` (switched off on purpose); ``unavailable`` (cannot start)."""
    mode = requested_mode()
    if mode == "off":
        return SandboxStatus("disabled", f"The shell sandbox is switched off ({MODE_ENV}=off).")
    settings = load_sandbox_settings(pc)
    if settings.enabled is False and mode != "on":
        return SandboxStatus("disabled", "The shell sandbox is switched off by the settings (sandbox.enabled).")
    result = probe()
    if result.ok:
        return SandboxStatus("active", "Bash commands run in a sandbox (bubblewrap).")
    required = mode == "on" or settings.fail_if_unavailable
    then = "be refused" if required else "ask for your approval in every permission mode"
    return SandboxStatus(
        "unavailable",
        f"The shell sandbox could not start: {result.detail}. Bash commands run without it, so every command "
        f"that is not proven read-only will {then}. "
        "Install bubblewrap (apt-get install bubblewrap) and make sure user namespaces are enabled.",
        fail_closed=required)


def sandbox_warning(pc: PermissionContext | None = None) -> str | None:
    """The sentence the window shows when the sandbox cannot start (None when it runs or is off on purpose)."""
    status = sandbox_status(pc)
    return status.message if status.state == "unavailable" else None


_warned = False


def warn_once(pc: PermissionContext | None = None, stream: Any = None) -> bool:
    """Write the unavailable-sandbox warning to stderr, once per process. True when it was written now."""
    global _warned
    if _warned:
        return False
    text = sandbox_warning(pc)
    if text is None:
        return False
    _warned = True
    try:
        print(f"desktop-agent: warning: {text}", file=stream or sys.stderr, flush=True)
    except Exception:  # pragma: no cover - a closed stderr
        pass
    return True



# --------------------------------------------------------------------------------------------------- decisions


UNSANDBOXED_ASK = ("This command asks to run outside the sandbox (dangerouslyDisableSandbox), with full access "
                   "to your files and network.")


def without_analysis(decision: PermissionDecision) -> PermissionDecision:
    """The test switch SKIP_ANALYSIS_ENV: keep a deny or ask that a ``Bash(...)`` rule made, allow everything
    else (path findings from Read/Edit rules too: those are the sandbox's to hold)."""
    dr = decision.decision_reason
    if dr is not None and dr.type == "rule" and dr.rule is not None and decision.behavior in ("deny", "ask") \
            and dr.rule.behavior == decision.behavior and dr.rule.value.tool_name == "Bash":
        return decision
    return PermissionDecision(behavior="allow", updated_input=decision.updated_input,
                              decision_reason=DecisionReason(type="other",
                                                             reason=f"static analysis skipped ({SKIP_ANALYSIS_ENV})"))


NO_SANDBOX_IN_CONTEXT = ("This session starts shells without the sandbox (its tool context has none), so every command "
                         "that is not proven read-only asks for approval.")


def gate_decision(decision: PermissionDecision, *, read_only: bool, disable_sandbox: bool,
                  pc: PermissionContext | None, has_sandbox: bool = True) -> PermissionDecision:
    """The sandbox's word on the static analysis' decision: an escape always asks; with the sandbox
    unavailable, anything not proven read-only asks (or is denied when the sandbox is required).
    ``has_sandbox`` false (a tool context built without ``ctx.sandbox``: its shells would start unsandboxed)
    counts as unavailable whenever the sandbox should be on — fail closed, never a silent escape."""
    if decision.behavior == "deny":
        return decision
    settings = load_sandbox_settings(pc)
    status = sandbox_status(pc)
    if status.state == "unavailable":
        warn_once(pc)
    elif status.state == "active" and not has_sandbox:
        status = SandboxStatus("unavailable", NO_SANDBOX_IN_CONTEXT)
    if disable_sandbox and settings.allow_unsandboxed_commands:
        return PermissionDecision(behavior="ask", message=UNSANDBOXED_ASK, updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="safetyCheck", reason=UNSANDBOXED_ASK))
    if status.state == "unavailable" and not read_only:
        behavior: Literal["deny", "ask"] = "deny" if status.fail_closed else "ask"
        return PermissionDecision(behavior=behavior, message=status.message, updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="safetyCheck", reason=status.message))
    return decision
