"""``cli.argv``: one parser for ``-p`` and the window's flags; ``Options.window()`` is what the window opens with."""

from __future__ import annotations

import pytest

from desktop_agent.app.options import WindowOptions
from desktop_agent.cli import main
from desktop_agent.cli.argv import USAGE, UsageError, parse_args


def test_window_flags_become_window_options():
    opts = parse_args(["proj", "--demo", "--resume", "abc", "--theme", "dark", "--executor", "claude",
                       "--claude-path", "/opt/claude", "--permission-mode", "plan"])
    assert not opts.headless
    assert opts.window() == WindowOptions(folder="proj", demo=True, resume="abc", theme="dark",
                                          permission_mode="plan", executor="claude", claude_path="/opt/claude")
    assert parse_args([]).window() == WindowOptions()
    assert parse_args(["p", "--dangerously-skip-permissions"]).window().permission_mode == "bypassPermissions"
    assert parse_args(["p", "--permission-mode", "manual"]).window().permission_mode == "default"


@pytest.mark.parametrize("args, text", [
    (["--theme", "pink"], "--theme must be one of system, light, dark (got 'pink')"),
    (["--executor", "docker"], "--executor must be one of inprocess, process, claude (got 'docker')"),
    (["--permission-mode", "yolo"], "--permission-mode must be one of"),
    (["--demo=yes"], "option '--demo' takes no value"),
    (["--claude-path"], "option '--claude-path' needs a value"),
])
def test_bad_window_flag_values_are_usage_errors(args, text):
    with pytest.raises(UsageError) as info:
        parse_args(args)
    assert text in str(info.value)


@pytest.mark.parametrize("args, text", [
    (["proj", "--model", "m"], "option '--model' needs -p"),
    (["proj", "--future-flag"], "option '--future-flag' needs -p"),
    (["one", "two"], "the window takes one FOLDER (got 2 arguments)"),
])
def test_what_only_headless_understands_stops_the_window(args, text):
    with pytest.raises(UsageError) as info:
        parse_args(args).window()
    assert text in str(info.value)


def test_window_flags_with_print_are_ignored_not_swallowing_the_prompt():
    opts = parse_args(["-p", "--demo", "hello", "--theme", "dark", "--future-flag"])
    assert opts.headless and opts.positionals == ["hello"]
    assert opts.window_only() == ["--demo", "--theme"] and opts.unknown == ["--future-flag"]


def test_one_help_text_lists_both():
    for flag in ("--demo", "--theme", "--executor inprocess|process|claude", "--claude-path", "-p, --print",
                 "--output-format", "--permission-prompt-tool"):
        assert flag in USAGE


def test_main_hands_the_window_its_options(capsys):
    seen: list[WindowOptions] = []

    def open_window(options: WindowOptions) -> int:
        seen.append(options)
        return 7

    assert main(["proj", "--theme", "light"], open_window=open_window) == 7
    assert seen == [WindowOptions(folder="proj", theme="light")]
    assert main(["proj", "--verbose"], open_window=open_window) == 2
    err = capsys.readouterr().err
    assert err.startswith("desktop-agent: error: option '--verbose' needs -p") and len(seen) == 1
    assert main(["--theme", "pink"], open_window=open_window) == 2
    assert "--theme must be one of" in capsys.readouterr().err
    assert main(["--help"], open_window=open_window) == 0 and "Options (window)" in capsys.readouterr().out
    assert len(seen) == 1
