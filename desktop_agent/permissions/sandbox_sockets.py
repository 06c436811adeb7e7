"""No Unix socket of the host inside the sandbox: the private directories that hide the usual socket locations, the
host sockets still visible elsewhere (masked), and the one hook for binding a socket in (``bind_socket``; the
egress proxy, issue 27, needs none after all: it accepts on a socket made inside the session's namespace).
``socket_policy`` computes it for one shell; ``sandbox_policy.SandboxPolicy`` turns it
into bubblewrap flags.

How (chosen by measurement; figures in bench/bench_sandbox.py and the README):
- ``/tmp``, ``/run`` (``/var/run`` links there), ``$XDG_RUNTIME_DIR`` and ``/var/tmp`` are private, empty
  tmpfs inside the sandbox, read-only once the sandbox is set up (as the host's were: only ``TMPDIR`` and the
  working directories are writable). That hides D-Bus (``/run/user/<uid>/bus``, ``/run/dbus``), X11
  (``/tmp/.X11-unix``), ssh-agent (``/tmp/ssh-*``), ``/run/docker.sock``, containerd, podman, systemd, our own
  background host's socket... whether or not they were bound in this network namespace (a socket mounted in from
  a container's host is not listed anywhere).
- What must stay visible under them is bound back: the working directories and ``TMPDIR`` (writable, by
  ``SandboxPolicy``), and read-only ``$HOME``, every ``PATH`` directory, the shell's cwd and the shell itself
  when they live there, and ``/etc/resolv.conf``'s target when the network is on.
- Every other path-bound socket of the host that is still visible gets ``/dev/null`` bound over it (``connect``
  then fails with ECONNREFUSED): the ones ``/proc/net/unix`` lists (every socket bound in this network
  namespace: ``~/.gnupg/S.gpg-agent``, a socket inside the project...), and the ones the environment names
  (``SSH_AUTH_SOCK``, ``DBUS_SESSION_BUS_ADDRESS``, ``DOCKER_HOST``, ``WAYLAND_DISPLAY``, ...) even when bound
  in another namespace. Only paths that are sockets now are masked (a stale entry is skipped).
- Abstract sockets (``@/tmp/.X11-unix/X0``, ``@/containerd-shim/...``) belong to the network namespace: the
  sandbox's own (``--unshare-net``), or with ``sandbox.network.allowedDomains`` the session's egress namespace
  (``permissions.egress``), has none of the host's. The host's network namespace is never shared.

Why not seccomp (``bwrap --seccomp FD`` denying ``socket(AF_UNIX)``): it costs the same — measured here, ``bwrap
... bash -c true``, median of 40, interleaved: 4.74 ms today's flags, 4.59 ms with the private dirs, 5.23 ms with
them and five stubs, 4.46 ms with a seccomp filter instead — and holds for abstract sockets too, but seccomp
cannot see the path a ``connect`` names, so it
can only forbid Unix sockets altogether — ``socket(AF_UNIX)`` fails, which breaks programs that use their own
(Python's multiprocessing forkserver, the default from 3.14; test servers on a socket in the project; tmux;
ssh ControlMaster; git's credential cache) — and it needs the descriptor inherited by bubblewrap, which the
shell launcher does not do today. Limits that remain: a socket bound in another network namespace, mounted at a
path outside the private directories, and named by no environment variable, is not found.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from desktop_agent.util.paths import is_inside as _inside

PRIVATE_DIRS = ("/tmp", "/var/tmp", "/run", "/var/run")
SOCKET_ENV = ("SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "DOCKER_HOST",
              "CONTAINER_HOST", "WAYLAND_DISPLAY", "PULSE_SERVER", "GPG_AGENT_INFO", "TMUX", "STY",
              "SWAYSOCK", "I3SOCK", "HYPRLAND_INSTANCE_SIGNATURE", "KITTY_LISTEN_ON", "NVIM", "NVIM_LISTEN_ADDRESS",
              "EMACS_SOCKET_NAME", "PODMAN_SOCK", "VSCODE_IPC_HOOK_CLI")
PROC_NET_UNIX = "/proc/net/unix"


@dataclass
class SocketPolicy:
    """Private tmpfs dirs (host paths, real), read-only re-binds under them, sockets masked with /dev/null, and
    sockets bound in on purpose (host path, path inside)."""

    private_dirs: list[str] = field(default_factory=list)
    visible: list[str] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)
    bound: list[tuple[str, str]] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # bound back writable by SandboxPolicy (working dirs, TMPDIR)


def _real_dir(path: str) -> str | None:
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return real if os.path.isdir(real) else None


def private_dirs(env: dict[str, str]) -> list[str]:
    """The host directories the sandbox replaces with an empty tmpfs (real paths, no nesting)."""
    out: list[str] = []
    runtime = env.get("XDG_RUNTIME_DIR") or os.environ.get("XDG_RUNTIME_DIR") or ""
    for p in (*PRIVATE_DIRS, *([runtime] if runtime.startswith("/") else [])):
        real = _real_dir(p)
        if real and real != "/" and real not in out:
            out.append(real)
    return sorted(out, key=len)  # nested ones kept: a re-bound parent ($HOME) must not show them again


def _env_socket_paths(env: dict[str, str]) -> list[str]:
    """Socket paths the environment names (``unix:path=...``, ``unix://...``, plain paths, ``TMUX=path,pid,n``)."""
    out: list[str] = []
    runtime = env.get("XDG_RUNTIME_DIR") or ""
    for key in SOCKET_ENV:
        value = env.get(key) or ""
        for item in value.replace(";", ",").split(","):
            item = item.strip()
            for prefix in ("unix:path=", "unix://", "unix:"):
                if item.startswith(prefix):
                    item = item[len(prefix):].split(",")[0]
                    break
            if item.startswith("/"):
                out.append(item)
            elif key == "WAYLAND_DISPLAY" and item and runtime:
                out.append(os.path.join(runtime, item))
    return out


def bound_unix_sockets(limit: int = 200_000) -> list[str]:
    """Paths of the Unix sockets bound in this network namespace (``/proc/net/unix``; abstract ones left out)."""
    out: list[str] = []
    try:
        with open(PROC_NET_UNIX, "rb") as fh:
            data = fh.read(64 << 20)
    except OSError:
        return out
    for line in data.split(b"\n")[1:limit]:
        parts = line.split(None, 7)
        if len(parts) == 8 and parts[7].startswith(b"/"):
            out.append(os.fsdecode(parts[7]))
    return out


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def _real_socket(path: str) -> str | None:
    """The path of a socket with its directories resolved (the socket itself is never a symlink target here)."""
    try:
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    except (OSError, ValueError):
        return None
    return real if _is_socket(real) else None


def socket_policy(env: dict[str, str], *, shown: list[str], keep_visible: list[str], network: bool) -> SocketPolicy:
    """The socket side of one shell's sandbox. ``shown``: host paths bound back writable (working dirs, TMPDIR);
    ``keep_visible``: paths that must stay readable (home, PATH dirs, cwd, the shell) — re-bound read-only when
    a private dir hides them and no ``shown`` dir holds them."""
    # a private dir inside a working dir (the folder is `/`) would be shown again by its bind: left to the masks
    sp = SocketPolicy(private_dirs=[p for p in private_dirs(env) if not any(_inside(p, s) for s in shown)])
    hidden = sp.private_dirs
    want = list(keep_visible)
    if network:
        try:
            want.append(os.path.dirname(os.path.realpath("/etc/resolv.conf")))
        except (OSError, ValueError):
            pass
    for p in want:
        real = _real_dir(p) if os.path.isdir(p) else _real_dir(os.path.dirname(p) or "/")
        if not real or not any(_inside(real, h) for h in hidden) or any(_inside(real, s) for s in shown):
            continue
        if real not in sp.visible:
            sp.visible.append(real)
    sp.visible.sort(key=len)  # nested ones kept: a private dir may lie between them
    sp.shown = list(shown)
    seen: set[str] = set()
    for raw in [*bound_unix_sockets(), *_env_socket_paths(env)]:
        real = _real_socket(raw)
        if real is None or real in seen:
            continue
        seen.add(real)
        if not is_visible(sp, real):
            continue  # under a private dir: not there inside
        sp.masked.append(real)
    return sp


def is_visible(sp: SocketPolicy, path: str) -> bool:
    """Is host ``path`` there inside the sandbox? The deepest of the private dirs (hidden), the re-binds and the
    working dirs (shown) that holds it decides (``socket_args`` orders the mounts so that the deepest wins)."""
    best, shown = -1, True
    for dirs, visible in ((sp.private_dirs, False), (sp.visible, True), (sp.shown, True)):
        for d in dirs:
            if _inside(path, d) and len(d) > best:
                best, shown = len(d), visible
    return shown


def bind_socket(sp: SocketPolicy, host_path: str, inside_path: str | None = None) -> None:
    """The one exception to "no host socket": bind ``host_path`` (a socket of ours, e.g. the egress proxy's) at
    ``inside_path`` (default: the same path) after the private dirs and the masks, so neither hides it. Choose
    an ``inside_path`` under a private dir (``/run/...``, ``/tmp/...``): bubblewrap creates it there."""
    inside = inside_path or host_path
    sp.masked = [m for m in sp.masked if m != inside]
    sp.bound.append((host_path, inside))


def socket_args(sp: SocketPolicy, phase: str) -> list[str]:
    """bubblewrap flags: ``pre`` (tmpfs over the private dirs and the read-only re-binds, parents first; before
    the working dirs are bound), ``post`` (masks and bound sockets; after every other bind), ``seal`` (the
    private dirs made read-only; last)."""
    args: list[str] = []
    if phase == "pre":  # parents first, so that a private dir inside a re-bound one ($HOME) stays hidden
        for p, private in sorted([(p, True) for p in sp.private_dirs] + [(p, False) for p in sp.visible],
                                 key=lambda x: len(x[0])):
            args += ["--tmpfs", p] if private else ["--ro-bind", p, p]
    elif phase == "post":
        for p in sp.masked:
            args += ["--ro-bind", "/dev/null", p]
        for host, inside in sp.bound:
            args += ["--bind", host, inside]
    elif phase == "seal":
        for p in sp.private_dirs:
            args += ["--remount-ro", p]
    return args
