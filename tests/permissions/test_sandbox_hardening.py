"""The bubblewrap argv for the socket policy (``sandbox_sockets``) and the command stubs (``sandbox_stubs``), built
from real permission contexts over real files and checked by running bubblewrap where it matters: the mount
order (private dirs before the working dirs, masks and stubs after, the seal last), what stays visible, what is
masked, which rules make stubs and which binaries they cover."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from desktop_agent.core.permission import PermissionRule
from desktop_agent.permissions import sandbox, sandbox_policy, sandbox_settings, sandbox_sockets, sandbox_stubs
from desktop_agent.permissions.context import PermissionContext
from desktop_agent.permissions.rules import parse_rule

needs_bwrap = pytest.mark.skipif(not sandbox.probe().ok, reason="bubblewrap cannot start here")


def pc_with(ws, deny=()):
    rules = [PermissionRule(value=parse_rule(r), behavior="deny", source="session") for r in deny]
    return PermissionContext(str(ws), mode="default", rules=rules, trusted=True)


def policy_for(ws, tmpdir, env, deny=(), shell="/bin/bash"):
    os.makedirs(tmpdir, exist_ok=True)
    pc = pc_with(ws, deny)
    policy = sandbox_policy.build_policy(pc, pc.working_dirs, tmpdir=str(tmpdir),
                                         settings=sandbox_settings.SandboxSettings())
    sandbox_policy.add_socket_policy(policy, env, cwd=str(ws), shell=shell)
    sandbox_policy.add_command_stubs(policy, pc, env, shell)
    return policy


def run_inside(policy, cwd, command):
    argv = [sandbox.probe().bwrap, *policy.bwrap_args(), "--chdir", str(cwd), "--", "/bin/bash", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "victim").write_text("v")
    return d


def _listen(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.listen()
    return s


def test_order_private_dirs_first_then_working_dirs_then_masks_stubs_and_the_seal(ws, tmp_path):
    home = tmp_path / "home"
    (home / "rt").mkdir(parents=True)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(home / "rt")}
    sock = _listen(home / "agent.sock")
    try:
        policy = policy_for(ws, tmp_path / "t", env, deny=["Bash(rm:*)"])
        args = policy.bwrap_args()
    finally:
        sock.close()
    joined = " ".join(args)
    tmpfs = [args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"]
    assert {"/tmp", "/run", str(home / "rt")} <= set(tmpfs)
    assert joined.index("--tmpfs /tmp") < joined.index(f"--ro-bind {home} {home}") \
        < joined.index(f"--tmpfs {home / 'rt'}")  # the runtime dir stays hidden inside the re-bound home
    assert joined.index("--tmpfs /tmp") < joined.index(f"--bind {ws} {ws}")
    assert joined.index(f"--bind {ws} {ws}") < joined.index(f"--ro-bind /dev/null {home / 'agent.sock'}")
    stub_dst = os.path.realpath("/usr/bin/rm")
    assert joined.index(f"{stub_dst}") < joined.index("--remount-ro /tmp")
    seal = args[args.index("--remount-ro"):]  # the seal comes last: every private dir read-only again
    assert seal[::2] == ["--remount-ro"] * (len(seal) // 2) and set(seal[1::2]) == set(tmpfs)


@needs_bwrap
def test_inside_host_sockets_are_gone_working_dir_writable_home_readable(ws, tmp_path):
    home = tmp_path / "home"
    (home / "rt").mkdir(parents=True)
    (home / "notes").write_text("home-readable\n")
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "XDG_RUNTIME_DIR": str(home / "rt")}
    socks = [_listen(home / "rt" / "bus"), _listen(home / "agent.sock")]
    try:
        policy = policy_for(ws, tmp_path / "t", env)
        out = run_inside(policy, ws, f"ls {home / 'rt'}; test -S {home}/agent.sock && echo SOCKET; "
                                     f"cat {home}/notes; echo w > {ws}/new && cat {ws}/new; "
                                     f"echo x > /tmp/y 2>&1 || echo tmp-read-only; ls {tmp_path}")
    finally:
        for s in socks:
            s.close()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert "bus" not in out.stdout and "SOCKET" not in out.stdout
    assert "home-readable" in lines and "w" in lines and "tmp-read-only" in out.stdout + out.stderr
    # the run's tmp dir holds only what is bound back: home, ws and the private TMPDIR
    assert set(lines[lines.index("w") + 1:]) - {"", "tmp-read-only"} <= {"home", "ws", "t"}


def test_a_stale_socket_entry_and_an_abstract_one_are_not_masked(tmp_path, monkeypatch):
    table = tmp_path / "unix"
    live = tmp_path / "live.sock"
    s = _listen(live)
    try:
        table.write_text("Num RefCount Protocol Flags Type St Inode Path\n"
                         f"0: 00000002 00000000 00010000 0001 01 1 {live}\n"
                         f"0: 00000002 00000000 00010000 0001 01 2 {tmp_path}/gone.sock\n"
                         "0: 00000002 00000000 00010000 0001 01 3 @abstract-one\n")
        monkeypatch.setattr(sandbox_sockets, "PROC_NET_UNIX", str(table))
        sp = sandbox_sockets.socket_policy({}, shown=[str(tmp_path)], keep_visible=[], network=False)
    finally:
        s.close()
    assert sp.masked == [str(live)]


def test_env_named_sockets_are_found():
    env = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x/bus,guid=1;unix:abstract=/y", "DOCKER_HOST": "unix:///d.sock",
           "SSH_AUTH_SOCK": "/s/agent", "WAYLAND_DISPLAY": "wayland-0", "XDG_RUNTIME_DIR": "/r", "TMUX": "/t/s,12,0"}
    assert set(sandbox_sockets._env_socket_paths(env)) == {"/x/bus", "/d.sock", "/s/agent", "/r/wayland-0", "/t/s"}


def test_bind_socket_is_the_one_exception(tmp_path):
    sp = sandbox_sockets.SocketPolicy(private_dirs=["/tmp"], masked=[str(tmp_path / "proxy.sock")])
    sandbox_sockets.bind_socket(sp, str(tmp_path / "proxy.sock"))
    post = sandbox_sockets.socket_args(sp, "post")
    assert post == ["--bind", str(tmp_path / "proxy.sock"), str(tmp_path / "proxy.sock")]


def test_a_working_dir_containing_tmp_keeps_it_and_masks_sockets_instead():
    sp = sandbox_sockets.socket_policy({}, shown=["/"], keep_visible=[], network=False)
    assert sp.private_dirs == []


@pytest.mark.parametrize("content,program", [
    ("rm:*", "rm"), ("rm *", "rm"), ("rm", "rm"), ("/usr/bin/rm:*", "rm"), ("python3.11:*", "python3.11"),
    ("git push:*", None), ("rm -rf:*", None), ("r*", None), ("*", None), ("", None), ("FOO=1 rm:*", None)])
def test_which_rules_make_stubs(content, program):
    assert sandbox_stubs.program_of_rule(content) == program


def test_stubs_cover_every_name_and_hard_link_but_never_the_shell(ws, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    real = bindir / "tool"
    real.write_text("#!/bin/sh\necho real\n")
    real.chmod(0o755)
    os.link(real, bindir / "tool-2.0")          # a hard link under another name
    os.symlink(real, tmp_path / "tool-link")    # a symlink resolves to the same file
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    policy = policy_for(ws, tmp_path / "t", env, deny=["Bash(tool:*)", "Bash(bash:*)", "Bash(git push:*)"])
    targets = {dst for _, dst in policy.stubs}
    assert {str(real), str(bindir / "tool-2.0")} <= targets
    assert os.path.realpath("/bin/bash") not in targets and any("bash" in n for n in policy.notes)
    assert not any(t.endswith("/git") for t in targets)
    src = policy.stubs[0][0]
    assert not any(sandbox_policy._inside(src, w) for w in policy.writable)
    text = open(src).read()
    assert "Bash(tool:*)" in text and "exit 126" in text


@needs_bwrap
def test_inside_the_stub_refuses_by_every_name(ws, tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    policy = policy_for(ws, tmp_path / "t", env, deny=["Bash(rm:*)"])
    out = run_inside(policy, ws, "rm victim; echo rc=$?; /usr/bin/rm victim; /lib64/ld-linux-x86-64.so.2 /bin/rm "
                                 "victim; cp /bin/rm $TMPDIR/r && $TMPDIR/r victim; ls victim")
    assert "rc=126" in out.stdout and "rm is denied by the permission rule Bash(rm:*)" in out.stderr
    assert (ws / "victim").exists() and "victim" in out.stdout


@needs_bwrap
def test_a_socket_or_binary_under_a_read_denied_dir_does_not_break_the_start(ws, tmp_path):
    (ws / "secrets").mkdir()
    s = _listen(ws / "secrets" / "s.sock")
    bindir = ws / "secrets" / "bin"
    bindir.mkdir()
    (bindir / "tool").write_text("#!/bin/sh\necho real\n")
    (bindir / "tool").chmod(0o755)
    try:
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
        policy = policy_for(ws, tmp_path / "t", env, deny=["Read(./secrets/**)", "Bash(tool:*)"])
        out = run_inside(policy, ws, "ls secrets | wc -l; echo started")
    finally:
        s.close()
    assert out.returncode == 0 and "started" in out.stdout, out.stderr
    assert out.stdout.split()[0] == "0"


def test_a_bash_loadable_builtin_of_the_name_gets_dev_null(ws, tmp_path):
    libdir = tmp_path / "loadables"
    libdir.mkdir()
    (libdir / "tool").write_bytes(b"\x7fELF not really")
    pc = pc_with(ws, ["Bash(tool:*)"])
    binds, _ = sandbox_stubs.stub_binds(pc, "/usr/bin:/bin", "/bin/bash", str(libdir))
    assert (os.devnull, str(libdir / "tool")) in binds


@needs_bwrap
def test_plan_launch_puts_both_in_every_sandboxed_shell(ws, tmp_path):
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.permissions import sandbox_launch

    pc = pc_with(ws, ["Bash(rm:*)"])
    ctx = ToolUseContext(cwd=str(ws), permission_context=pc)
    plan = sandbox_launch.plan_launch(["/bin/bash", "-c", "rm victim"], str(ws), dict(os.environ), ctx,
                                      command="rm victim")
    assert plan.sandboxed and plan.argv[0] == sandbox.probe().bwrap
    joined = " ".join(plan.argv)
    assert "--tmpfs /tmp" in joined and f" {os.path.realpath('/usr/bin/rm')} " in joined
    out = subprocess.run(plan.argv, cwd=str(ws), env=plan.env, capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 126 and (ws / "victim").exists() and "Bash(rm:*)" in out.stderr
