"""The Bash tool's operating-system sandbox: a policy derived from the permission state, and the bubblewrap
launcher every foreground and background shell is spawned through (Linux).

Owns ``SandboxSettings`` (the settings ``sandbox`` block), ``SandboxPolicy`` / ``build_policy`` (what the
sandboxed shell may write, read and reach), the availability probe and ``sandbox_status()`` /
``sandbox_warning()`` (the text the window and stderr show when the sandbox cannot start), ``plan_launch``
(argv and environment of one shell), the git neutralisation for untrusted folders (``git_safety_env``), and
``gate_decision`` (how BashTool.check_permissions turns the static analysis' decision into the final one).

The policy (``build_policy``):
- writable: the working directories, ``sandbox.filesystem.allowWrite`` and a private temp dir (``TMPDIR``,
  ``TMP``, ``TEMP`` point at it; one per process, removed at exit). Everything else of ``/`` is bound
  read-only (``/tmp`` too: only ``TMPDIR`` is writable); ``/dev`` is bubblewrap's minimal one and ``/proc``
  the sandbox's own (a new PID namespace: no ``/proc/<agent>/root`` escape, no signals to outside processes).
- masked (unreadable): every path a ``Read(...)`` deny rule names, and ``sandbox.filesystem.denyRead``.
  A file gets ``/dev/null`` bound over it (reading fails with EACCES: binds are ``nodev``), a directory an
  empty read-only tmpfs. ``Read(./secrets/**)`` masks the directory, ``Read(./.env)`` the file. Patterns
  are expanded against the file system when the policy is built: literal paths on every command, glob and
  unanchored patterns (``Read(**/*.pem)``, ``Read(.env)`` at any depth) by walking the working directories
  (at most ``WALK_BUDGET`` entries, result reused for ``WALK_TTL_S`` seconds). **Files created later that a
  glob would match are not masked** until the next walk; files outside the working directories are found
  only for anchored patterns. Symlinks are resolved: the target is masked.
- read-only: every ``Edit(...)`` / ``Write(...)`` deny path (expanded the same way),
  ``sandbox.filesystem.denyWrite``, and in each working directory ``.git/hooks`` (created empty when
  missing, as ``git init`` would), ``.git/config`` (so ``git config``/``git remote add`` fail inside) and
  an existing ``.claude`` directory (a command cannot plant settings or hooks there; a missing ``.claude``
  is not covered).
- network: off (``--unshare-net``; loopback only, inside) unless ``sandbox.network.allowedDomains`` is
  non-empty. bubblewrap cannot filter by domain: **the allow list turns on all network**, not just the
  listed domains (Claude Code runs a filtering proxy for that; we do not).
- capabilities: all dropped (``--cap-drop ALL``): as root inside the sandbox a command could otherwise
  ``umount`` a mask. ``--die-with-parent``; no ``--new-session``: the shell stays in the process group the
  Bash tool created (``start_new_session``), so ``killpg`` on timeout/Stop reaches every process, and the
  PID namespace takes down whatever is left when its first process exits. (``--new-session`` would protect
  against TIOCSTI on a controlling terminal; the shell has none: it is a session leader's child with stdin
  from /dev/null.) A command's background children (``server &``) therefore end with the command.

Why bubblewrap and not Landlock (measured on this machine, kernel 6.18, Landlock ABI 7; 50 runs each):
``bash -c true`` plain 1.3-1.4 ms; under Landlock via a ctypes ``preexec_fn`` 2.8 ms (the cost is the
fork-without-vfork a preexec forces); under bubblewrap with the flags above 5-7 ms (see
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
Settings keys not listed here (``autoAllowBashIfSandboxed``, proxy ports, Unix sockets...) are ignored.

Git in untrusted folders (``git_safety_env``): repository config can start programs. The shell gets
``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` overrides (command scope: they win over
``.git/config`` and its includes): ``core.fsmonitor=false``, ``core.hooksPath=/dev/null``,
``core.pager=cat`` (+ ``GIT_PAGER=cat``), ``diff.external`` replaced by a plain ``diff -u`` (an empty value
makes git fail), ``core.sshCommand=ssh``, ``gpg.program``/``gpg.ssh.program``/``gpg.x509.program`` the
defaults, ``credential.helper=`` (resets the list), ``core.editor``/``sequence.editor`` ``true``,
``core.askPass=``, ``core.gitProxy=none``, ``protocol.ext.allow=never``. Drivers with user-chosen names
(``filter.<x>.clean/smudge/process``, ``diff.<x>.textconv``, ``merge.<x>.driver``, ``pager.<cmd>`` when
stdout is a terminal) cannot be listed generically and are not neutralised: the sandbox contains them.

Test-only switches (environment):
- ``DESKTOP_AGENT_SANDBOX=off|on|auto`` (default ``auto``: on when bubblewrap starts). ``off`` runs every
  command unsandboxed with the static analysis alone (no forced asks); ``on`` requires the sandbox (when it
  cannot start, non-read-only commands are denied).
- ``DESKTOP_AGENT_BWRAP=PATH``: the bubblewrap binary (a missing path simulates an unavailable sandbox).
- ``DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS=1``: BashTool.check_permissions replaces the static analysis'
  result by "allow" unless a ``Bash(...)`` deny (or ask) rule matched — as bypass mode would; findings from
  Read/Edit path rules are dropped too — so the sandbox alone is tested. Never set it outside tests.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

from desktop_agent.util.git_env import GIT_OVERRIDES, git_safety_env  # noqa: F401 - re-exported
from desktop_agent.permissions import settings as settings_mod
from desktop_agent.permissions.rules import PathPattern, compile_path_pattern
from desktop_agent.core.permission import DecisionReason, PermissionDecision

MODE_ENV = "DESKTOP_AGENT_SANDBOX"
BWRAP_ENV = "DESKTOP_AGENT_BWRAP"
SKIP_ANALYSIS_ENV = "DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS"
WALK_BUDGET = 20_000
WALK_TTL_S = 10.0
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


# --------------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class SandboxSettings:
    """The settings ``sandbox`` block, merged over the sources (scalars: highest source; lists: merged)."""

    enabled: bool | None = None
    fail_if_unavailable: bool = False
    allow_unsandboxed_commands: bool = True
    excluded_commands: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()  # absolute paths
    deny_write: tuple[PathPattern, ...] = ()
    deny_read: tuple[PathPattern, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def network(self) -> bool:
        return bool(self.allowed_domains)


def _fs_pattern(content: str, root: str, cwd: str, home: str) -> PathPattern:
    """A ``sandbox.filesystem`` path: ``//abs``, ``~/home``, ``/`` relative to the settings file's dir, else cwd."""
    return compile_path_pattern(content, "deny", root, cwd, home)


def _str_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


def settings_from_sources(sources: Iterable[Any], *, trusted: bool, cwd: str, home: str) -> SandboxSettings:
    """Merge the ``sandbox`` blocks of settings sources (highest precedence first)."""
    enabled: bool | None = None
    fail: bool | None = None
    allow_unsandboxed: bool | None = None
    excluded: list[str] = []
    domains: list[str] = []
    allow_write: list[str] = []
    deny_write: list[PathPattern] = []
    deny_read: list[PathPattern] = []
    warnings: list[str] = []
    for src in sources:
        block = src.data.get("sandbox") if isinstance(src.data, dict) else None
        if block is None:
            continue
        where = src.path or src.source
        if not isinstance(block, dict):
            warnings.append(f"'sandbox' in {where} must be an object; it was ignored.")
            continue
        held_back = src.source in settings_mod.PROJECT_SOURCES and not trusted  # may only tighten
        root = os.path.dirname(os.path.dirname(src.path)) if src.path and src.source in \
            settings_mod.PROJECT_SOURCES else (os.path.dirname(src.path) if src.path else cwd)
        value = block.get("enabled")
        if isinstance(value, bool) and enabled is None and not (held_back and value is False):
            enabled = value
        value = block.get("failIfUnavailable")
        if isinstance(value, bool) and fail is None and not (held_back and value is False):
            fail = value
        value = block.get("allowUnsandboxedCommands")
        if isinstance(value, bool) and allow_unsandboxed is None and not (held_back and value is True):
            allow_unsandboxed = value
        if not held_back:
            excluded += [c.strip() for c in _str_list(block.get("excludedCommands"))]
        network = block.get("network")
        if isinstance(network, dict) and not held_back:
            domains += _str_list(network.get("allowedDomains"))
        fs = block.get("filesystem")
        if isinstance(fs, dict):
            if not held_back:
                for p in _str_list(fs.get("allowWrite")):
                    pp = _fs_pattern(p, root, cwd, home)
                    allow_write.append(os.path.normpath(os.path.join(pp.root, pp.glob)))
            deny_write += [_fs_pattern(p, root, cwd, home) for p in _str_list(fs.get("denyWrite"))]
            deny_read += [_fs_pattern(p, root, cwd, home) for p in _str_list(fs.get("denyRead"))]
    return SandboxSettings(enabled=enabled, fail_if_unavailable=bool(fail),
                           allow_unsandboxed_commands=allow_unsandboxed is not False,
                           excluded_commands=tuple(dict.fromkeys(excluded)), allowed_domains=tuple(domains),
                           allow_write=tuple(dict.fromkeys(allow_write)), deny_write=tuple(deny_write),
                           deny_read=tuple(deny_read), warnings=tuple(warnings))


def load_sandbox_settings(pc: Any) -> SandboxSettings:
    """The sandbox settings of a permission context (read once per context; none without one)."""
    if pc is None or not hasattr(pc, "original_cwd"):
        return SandboxSettings()
    cached = getattr(pc, "_sandbox_settings", None)
    if isinstance(cached, SandboxSettings):
        return cached
    warnings: list[str] = []
    try:
        sources = settings_mod.collect_sources(pc.original_cwd, getattr(pc, "settings_arg", None), warnings,
                                               getattr(pc, "project_dir", None))
    except Exception as exc:  # unreadable settings: the defaults (sandbox on), never off
        sources, warnings = [], [f"Could not read the sandbox settings: {exc}"]
    result = settings_from_sources(sources, trusted=bool(getattr(pc, "trusted", False)), cwd=pc.original_cwd,
                                   home=getattr(pc, "home", os.path.expanduser("~")))
    try:
        pc._sandbox_settings = result
    except Exception:  # pragma: no cover - a frozen stand-in
        pass
    return result


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


def _base_flags(network: bool) -> list[str]:
    flags = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--cap-drop", "ALL",
             "--die-with-parent"]
    if network:
        flags.append("--share-net")
    return flags


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
                proc = subprocess.run([path, *_base_flags(False), "--", "true"], stdin=subprocess.DEVNULL,
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


def sandbox_status(pc: Any = None) -> SandboxStatus:
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


def sandbox_warning(pc: Any = None) -> str | None:
    """The sentence the window shows when the sandbox cannot start (None when it runs or is off on purpose)."""
    status = sandbox_status(pc)
    return status.message if status.state == "unavailable" else None


_warned = False


def warn_once(pc: Any = None, stream: Any = None) -> bool:
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


# --------------------------------------------------------------------------------------------------- policy


_tmpdir: str | None = None
_tmpdir_lock = threading.Lock()


def private_tmpdir() -> str:
    """This process's private temp dir for shells (writable inside the sandbox; removed at exit)."""
    global _tmpdir
    with _tmpdir_lock:
        if _tmpdir is None or not os.path.isdir(_tmpdir):
            _tmpdir = os.path.realpath(tempfile.mkdtemp(prefix="desktop-agent-shell-"))
            atexit.register(shutil.rmtree, _tmpdir, True)
        return _tmpdir


@dataclass
class SandboxPolicy:
    writable: list[str] = field(default_factory=list)
    read_only: list[str] = field(default_factory=list)
    masked_files: list[str] = field(default_factory=list)
    masked_dirs: list[str] = field(default_factory=list)
    network: bool = False
    tmpdir: str = ""
    notes: list[str] = field(default_factory=list)

    def bwrap_args(self) -> list[str]:
        args = _base_flags(self.network)
        for p in self.writable:
            args += ["--bind", p, p]
        for p in self.read_only:
            args += ["--ro-bind", p, p]
        for p in self.masked_files:
            args += ["--ro-bind", "/dev/null", p]
        for p in self.masked_dirs:
            args += ["--tmpfs", p, "--remount-ro", p]
        return args


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


_GLOB_CHARS = re.compile(r"[*?\[\\]")


def _literal_bases(root: str, segments: list[str]) -> list[str]:
    """Existing paths for ``root/segments...``, each segment matched exactly or case-insensitively (deny
    rules fold case)."""
    bases = [root]
    for seg in segments:
        nxt: list[str] = []
        for b in bases:
            exact = os.path.join(b, seg)
            if os.path.lexists(exact):
                nxt.append(exact)
                continue
            try:
                names = os.listdir(b)
            except OSError:
                continue
            nxt += [os.path.join(b, n) for n in names if n.casefold() == seg.casefold()]
        bases = nxt
        if not bases:
            break
    return bases


def _pattern_hit(pp: PathPattern, path: str, is_dir: bool) -> bool:
    return pp.matches(path) or (is_dir and pp.matches(path.rstrip("/") + "/"))


@dataclass
class _Walk:
    budget: int
    truncated: bool = False


def _expand(pp: PathPattern, search_dirs: list[str], walk: _Walk | None) -> list[str]:
    """Existing paths a rule pattern covers (a directory it covers whole is returned, not its content).
    ``walk`` None: only the literal part (no directory walk)."""
    segs = [s for s in pp.glob.split("/") if s] if pp.glob else []
    if pp.anchored:
        i = 0
        while i < len(segs) and not _GLOB_CHARS.search(segs[i]):
            i += 1
        starts = _literal_bases(pp.root, segs[:i])
        if i == len(segs) or (i == len(segs) - 1 and segs[i] in ("**", "*")):
            # literal, or `dir/**`/`dir/*`: the path itself (a `dir/*` rule covers what is in it: mask it whole)
            return [p for p in starts if os.path.lexists(p)]
    else:
        starts = [d for d in search_dirs if os.path.isdir(d)]
    if walk is None:
        return []
    hits: list[str] = []
    for start in starts:
        if _pattern_hit(pp, start, os.path.isdir(start)):
            hits.append(start)
            continue
        for dirpath, dirnames, filenames in os.walk(start):
            if walk.budget <= 0:
                walk.truncated = True
                return hits
            walk.budget -= len(dirnames) + len(filenames)
            keep = []
            for name in dirnames:
                p = os.path.join(dirpath, name)
                if _pattern_hit(pp, p, True):
                    hits.append(p)
                elif name != ".git" or not os.path.isdir(os.path.join(p, "objects")):
                    keep.append(name)
                else:  # a repository: its hooks/config/refs may match, never its objects
                    hits += [q for q in (os.path.join(p, n) for n in ("hooks", "config", "info"))
                             if os.path.lexists(q) and _pattern_hit(pp, q, os.path.isdir(q))]
            dirnames[:] = keep
            hits += [p for p in (os.path.join(dirpath, n) for n in filenames) if _pattern_hit(pp, p, False)]
    return hits


_walk_cache: dict[tuple[Any, ...], tuple[float, list[str], bool]] = {}


def _expand_all(patterns: list[PathPattern], search_dirs: list[str]) -> tuple[list[str], bool]:
    """Every existing path the patterns cover: literal ones now, walked ones cached for WALK_TTL_S."""
    out: list[str] = []
    walked: list[PathPattern] = []
    for pp in patterns:
        out += _expand(pp, search_dirs, None)
        segs = [s for s in pp.glob.split("/") if s] if pp.glob else []
        literal = pp.anchored and (not any(_GLOB_CHARS.search(s) for s in segs) or (
            segs and segs[-1] in ("**", "*") and not any(_GLOB_CHARS.search(s) for s in segs[:-1])))
        if not literal:
            walked.append(pp)
    truncated = False
    if walked:
        key = (tuple((pp.raw, pp.root, pp.glob, pp.anchored) for pp in walked), tuple(search_dirs))
        hit = _walk_cache.get(key)
        now = time.monotonic()
        if hit is None or now - hit[0] > WALK_TTL_S:
            walk = _Walk(WALK_BUDGET)
            found: list[str] = []
            for pp in walked:
                found += _expand(pp, search_dirs, walk)
            hit = (now, found, walk.truncated)
            if len(_walk_cache) > 64:
                _walk_cache.clear()
            _walk_cache[key] = hit
        out += hit[1]
        truncated = hit[2]
    return out, truncated


def _real(path: str) -> str | None:
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return real if os.path.exists(real) else None


def _git_protected(wd: str) -> list[str]:
    """``.git/hooks`` and ``.git/config`` of a working directory's repository (worktrees: the common dir's)."""
    dot = os.path.join(wd, ".git")
    gitdir: str | None = None
    if os.path.isdir(dot):
        gitdir = dot
    elif os.path.isfile(dot):
        try:
            with open(dot, encoding="utf-8", errors="replace") as fh:
                line = fh.read(4096).strip()
        except OSError:
            line = ""
        if line.startswith("gitdir:"):
            gitdir = os.path.normpath(os.path.join(wd, line[len("gitdir:"):].strip()))
    if gitdir is None or not os.path.isdir(gitdir):
        return []
    dirs = [gitdir]
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as fh:
            dirs.append(os.path.normpath(os.path.join(gitdir, fh.read().strip())))
    except OSError:
        pass
    out: list[str] = []
    for g in dirs:
        hooks = os.path.join(g, "hooks")
        if g == dirs[-1] and not os.path.lexists(hooks) and os.path.isfile(os.path.join(g, "HEAD")):
            try:
                os.makedirs(hooks, exist_ok=True)  # so a command cannot create it and plant a hook
            except OSError:
                pass
        out += [p for p in (hooks, os.path.join(g, "config")) if os.path.exists(p)]
    return out


def _path_rules(pc: Any, tools: tuple[str, ...]) -> list[PathPattern]:
    if pc is None or not hasattr(pc, "content_rules"):
        return []
    seen: set[int] = set()
    out: list[PathPattern] = []
    cwd, home = pc.original_cwd, getattr(pc, "home", os.path.expanduser("~"))
    for name in tools:
        for rule in pc.content_rules("deny", name):
            if id(rule) in seen:
                continue
            seen.add(id(rule))
            try:
                out.append(rule.path_pattern(cwd, home))
            except Exception:  # an uncompilable rule masks nothing; the permission layer reports it
                continue
    return out


def build_policy(pc: Any, working_dirs: Iterable[str], *, tmpdir: str | None = None,
                 settings: SandboxSettings | None = None) -> SandboxPolicy:
    """The sandbox for one shell, from the permission state (rules, dirs) and the sandbox settings."""
    settings = settings if settings is not None else load_sandbox_settings(pc)
    tmp = tmpdir or private_tmpdir()
    dirs: list[str] = []
    for d in [*working_dirs, *settings.allow_write]:
        real = _real(d)
        if real and os.path.isdir(real) and real not in dirs:
            dirs.append(real)
    policy = SandboxPolicy(tmpdir=tmp, network=settings.network)
    for d in sorted(dirs, key=len):
        if not any(_inside(d, w) for w in policy.writable):
            policy.writable.append(d)
    if not any(_inside(tmp, w) for w in policy.writable):
        policy.writable.append(tmp)
    search = [d for d in dirs]

    read_only: list[str] = []
    for wd in policy.writable:
        if wd == tmp:
            continue
        read_only += _git_protected(wd)
        claude = os.path.join(wd, ".claude")
        if os.path.isdir(claude):
            read_only.append(claude)
    edit_hits, t1 = _expand_all([*_path_rules(pc, ("Edit", "Write")), *settings.deny_write], search)
    read_hits, t2 = _expand_all([*_path_rules(pc, ("Read",)), *settings.deny_read], search)
    if t1 or t2:
        policy.notes.append(f"A deny pattern was expanded over the first {WALK_BUDGET} entries of the working "
                            "directories only.")
    read_only += edit_hits

    masked: dict[str, bool] = {}
    for p in read_hits:
        real = _real(p)
        if real and real != "/":
            masked[real] = os.path.isdir(real)
    for gitdir in _repos_tracking(list(masked), policy.writable):
        masked[gitdir] = True
        policy.notes.append(f"{gitdir} is hidden inside the sandbox: git tracks a file a Read deny rule covers, "
                            "and its object store holds that file's content.")
    mask_dirs: list[str] = []
    for p in sorted(masked, key=len):
        if any(_inside(p, d) for d in mask_dirs):
            continue
        if masked[p]:
            mask_dirs.append(p)
        else:
            policy.masked_files.append(p)
    policy.masked_dirs = mask_dirs
    ro: list[str] = []
    for p in sorted({r for r in (_real(x) for x in read_only) if r}, key=len):
        if p == "/" or any(_inside(p, d) for d in ro) or any(_inside(p, d) for d in mask_dirs):
            continue
        if p in masked:
            continue
        if not any(_inside(p, w) for w in policy.writable):
            continue  # already read-only
        ro.append(p)
    policy.read_only = ro
    return policy


# --------------------------------------------------------------------------------------------------- git

_TRACKED_CACHE: dict[tuple[str, str, float], bool] = {}


def _git_dir_of(path: str, roots: list[str]) -> tuple[str, str] | None:
    """(work tree, git dir) of the repository holding ``path``, searched up to a working directory."""
    d = path if os.path.isdir(path) else os.path.dirname(path)
    while True:
        dot = os.path.join(d, ".git")
        if os.path.isdir(dot):
            return d, dot
        if os.path.isfile(dot):
            try:
                with open(dot, encoding="utf-8", errors="replace") as fh:
                    line = fh.read(4096).strip()
            except OSError:
                line = ""
            if line.startswith("gitdir:"):
                return d, os.path.normpath(os.path.join(d, line[len("gitdir:"):].strip()))
        if any(d == r for r in roots) or os.path.dirname(d) == d or not any(_inside(d, r) for r in roots):
            return None
        d = os.path.dirname(d)


def _tracked(work_tree: str, git_dir: str, path: str) -> bool:
    """Does git track ``path`` (or anything under it)? Cached per index state. Fails closed: an error is yes."""
    try:
        stamp = os.stat(os.path.join(git_dir, "index")).st_mtime
    except OSError:
        stamp = 0.0
    rel = os.path.relpath(path, work_tree)
    key = (git_dir, rel, stamp)
    if key not in _TRACKED_CACHE:
        try:
            out = subprocess.run(["git", "-C", work_tree, "ls-files", "-z", "--", rel], capture_output=True,
                                 timeout=5, env=git_safety_env({**os.environ, "GIT_OPTIONAL_LOCKS": "0"}))
            _TRACKED_CACHE[key] = out.returncode != 0 or bool(out.stdout.strip(b"\0"))
        except (OSError, subprocess.SubprocessError):
            _TRACKED_CACHE[key] = True
    return _TRACKED_CACHE[key]


def _repos_tracking(masked: list[str], roots: list[str]) -> list[str]:
    """Git dirs (inside the working directories) whose repository tracks a Read-denied path: a mask over the
    file is not enough there — ``git show HEAD:.env``, ``git cat-file``, ``git log -p`` read it back from the
    object store — so the whole git dir is hidden. Every shell runs sandboxed, so git does not work in
    that repository from Bash while such a rule exists: the price of the guarantee (an untracked or
    ignored ``.env``, the usual case, leaves git alone)."""
    out: list[str] = []
    for path in masked:
        found = _git_dir_of(path, roots)
        if found is None:
            continue
        work_tree, git_dir = found
        real = _real(git_dir)
        if real and real not in out and any(_inside(real, r) for r in roots) and _tracked(work_tree, git_dir, path):
            out.append(real)
    return out


# --------------------------------------------------------------------------------------------------- launch


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


def plan_launch(argv: list[str], cwd: str, env: dict[str, str], ctx: Any, *, command: str = "",
                disable_sandbox: bool = False) -> LaunchPlan:
    """How to start one shell (``argv`` = ``[shell, "-c", script]``) for ``ctx``: inside bubblewrap when the
    sandbox is active (and not escaped with a yes'd ``dangerouslyDisableSandbox`` or an excluded command)."""
    pc = getattr(ctx, "permission_context", None)
    env = dict(env)
    if pc is None or not getattr(pc, "trusted", False):
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
    from desktop_agent.permissions.paths import working_dirs

    policy = build_policy(pc, working_dirs(ctx), tmpdir=tmp, settings=settings)
    bwrap = probe().bwrap or "bwrap"
    chdir = ["--chdir", cwd] if os.path.isdir(cwd) else []
    return LaunchPlan([bwrap, *policy.bwrap_args(), *chdir, "--", *argv], env, True, policy)


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


def gate_decision(decision: PermissionDecision, *, read_only: bool, disable_sandbox: bool,
                  pc: Any) -> PermissionDecision:
    """The sandbox's word on the static analysis' decision: an escape always asks; with the sandbox
    unavailable, anything not proven read-only asks (or is denied when the sandbox is required)."""
    if decision.behavior == "deny":
        return decision
    settings = load_sandbox_settings(pc)
    status = sandbox_status(pc)
    if status.state == "unavailable":
        warn_once(pc)
    if disable_sandbox and settings.allow_unsandboxed_commands:
        return PermissionDecision(behavior="ask", message=UNSANDBOXED_ASK, updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="safetyCheck", reason=UNSANDBOXED_ASK))
    if status.state == "unavailable" and not read_only:
        behavior: Literal["deny", "ask"] = "deny" if status.fail_closed else "ask"
        return PermissionDecision(behavior=behavior, message=status.message, updated_input=decision.updated_input,
                                  decision_reason=DecisionReason(type="safetyCheck", reason=status.message))
    return decision
