"""``desktop-agent host``'s own arguments (a subcommand only as the first argument: the reference agent's flags
and the window's FOLDER are untouched) and the optional systemd user unit."""

from __future__ import annotations

import configparser
from pathlib import Path

from desktop_agent.cli import main
from desktop_agent.cli.argv import parse_args
from desktop_agent.host.runtime import CONTROL_NAME, SOCKET_NAME

ROOT = Path(__file__).resolve().parents[2]


def test_host_arguments(capsys, host_env):
    assert main(["host", "--help"]) == 0
    assert "--status [--json]" in capsys.readouterr().out
    assert main(["host", "--bogus"]) == 2
    assert "unknown argument '--bogus'" in capsys.readouterr().err
    assert main(["host", "--stop", "--status"]) == 2
    assert main(["host", "--json"]) == 2
    assert main(["host", "--status"]) == 3
    assert "not running" in capsys.readouterr().out


def test_host_is_a_subcommand_only_in_first_place():
    opts = parse_args(["-p", "host"])  # a prompt "host"
    assert opts.headless and opts.positionals == ["host"]
    assert parse_args(["./host"]).window().folder == "./host"
    assert parse_args(["--resume", "abc", "host"]).window().folder == "host"


def test_the_systemd_unit_runs_the_host_in_the_foreground():
    path = ROOT / "packaging" / "desktop-agent-host.service"
    unit = configparser.ConfigParser(strict=True, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read_string(path.read_text("utf-8"))
    assert unit["Service"]["ExecStart"].endswith("desktop-agent host --foreground")
    assert unit["Service"]["Type"] == "simple" and unit["Install"]["WantedBy"] == "default.target"
    text = path.read_text("utf-8")
    assert f"%t/desktop-agent/{SOCKET_NAME}" in text and f"%t/desktop-agent/{CONTROL_NAME}" in text
