"""The ``desktop-agent`` command (SPEC App. C): the desktop window, or with ``-p`` the same engine headless.

``desktop-agent [FOLDER]`` opens the window; ``-p``/``--print``, ``--input-format stream-json`` or
``--output-format`` run headless with the reference agent's flags, so scripts and SDKs written for it work
unchanged:

- output ``text`` (the final reply), ``json`` (one ``result`` object) or ``stream-json`` (``system``
  init, ``assistant``/``user`` lines as the transcript grows, ``stream_event`` lines with
  ``--include-partial-messages``, and one ``result`` line per turn);
- input ``text`` (the prompt argument or stdin) or ``stream-json`` (user turns and control requests,
  one JSON object a line, read by an asyncio reader task while turns run);
- the control protocol on stdio: ``initialize`` (SDK hook callbacks are registered as callback hooks of
  the session's ``HookRunner``; each sends a ``hook_callback`` request), ``can_use_tool`` requests for every
  ``ask`` with ``--permission-prompt-tool stdio`` (``control_cancel_request`` when the wait is aborted; a
  duplicate or unknown response is ignored), ``set_permission_mode``, ``set_model`` and ``interrupt``, the
  SDK's further ``Query`` requests (``controls``: MCP status, toggle and reconnect, context usage, flag settings,
  settings-file keys, the Read-before-Edit seed; any other subtype is answered with an error naming it), and
  ``--await-initialize`` (MCP servers, settings and disallowed tools read from ``initialize`` before the session);
- ``/compact [instructions]`` as a prompt compacts the session instead of calling the model.

``desktop-agent host [--foreground|--status [--json]|--stop]`` is the background host (``host_command``).

The package: ``argv`` (the one parser, for ``-p`` and the window flags, and ``--help``), ``stdio`` (stdout lines,
the stdin reader), ``headless`` (``HeadlessRun``, ``run_headless``: the host of ``desktop_agent.host`` serving one
session over stdio; the control channel, the prompter, SDK hook callbacks and the App. D.5 requests are the host's). Every line is encoded and every control request decoded through ``desktop_agent.protocol``.

Unknown flags are reported on stderr and ignored with ``-p``; the window refuses them. A bad flag value or a
missing API key is one line on stderr and a non-zero exit. Exit code 0 when the last turn succeeded, 1 otherwise.
"""

from __future__ import annotations

import sys
from typing import Callable

from desktop_agent import __version__
from desktop_agent.app.options import WindowOptions
from desktop_agent.cli.argv import USAGE, UsageError, eprint, parse_args


def _enter_worktree(name: str | None) -> int:
    """``--worktree [name]``: the session runs in a git worktree of the folder (``session.worktrees``): this process
    moves into it, so the session's working folder, its permissions and its sandbox are the worktree's."""
    import os

    from desktop_agent.session.worktrees import WorktreeError, enter, session_dir

    try:
        here = os.getcwd()
        wt = enter(here, name)
        os.chdir(session_dir(here, wt))
    except (WorktreeError, OSError) as exc:
        eprint(f"error: --worktree: {exc}")
        return 1
    return 0


def main(argv: list[str] | None = None, open_window: Callable[[WindowOptions], int] | None = None) -> int:
    """The ``desktop-agent`` command: parse once; ``-p`` runs headless here, anything else opens the window
    through ``open_window`` with its typed options (given by ``desktop_agent.__main__``, the one module above
    both front ends)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["host"]:  # the background host's subcommand (only as the first argument)
        from desktop_agent.cli.host_command import main as host_main

        return host_main(args[1:])
    try:
        opts = parse_args(args)
    except UsageError as exc:
        eprint(f"error: {exc}")
        return 2
    if opts.version:
        print(f"{__version__} (Desktop Agent)")
        return 0
    if opts.help:
        sys.stdout.write(USAGE)
        return 0
    if opts.headless:
        from desktop_agent.cli.headless import freeze_heap, run_headless

        for flag in opts.unknown:
            eprint(f"warning: unknown option '{flag}' ignored")
        for flag in opts.window_only():
            eprint(f"warning: window option '{flag}' ignored with -p")
        if opts.worktree is not None:
            code = _enter_worktree(opts.worktree or None)
            if code:
                return code
        code = run_headless(opts)
        freeze_heap()  # skip the exit-time collection over every object
        return code
    try:
        window = opts.window()
    except UsageError as exc:
        eprint(f"error: {exc}")
        return 2
    if open_window is None:
        eprint("the desktop window is not available from this entry point")
        return 1
    return open_window(window)
