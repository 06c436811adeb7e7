"""The ``desktop-agent`` command and ``python -m desktop_agent``: the composition root above both front ends.

``-p``/``--print`` runs headless (``desktop_agent.cli``); anything else opens the window
(``desktop_agent.ui.main``, imported only then, so ``-p`` never loads Qt).
"""

from __future__ import annotations


def open_window(args: list[str]) -> int:
    try:
        from desktop_agent.ui.main import main as ui_main
    except ImportError as exc:
        print(f"desktop-agent: the desktop window is not available: {exc}")
        return 1
    return ui_main(args)


def main(argv: list[str] | None = None) -> int:
    from desktop_agent.cli import main as cli_main

    return cli_main(argv, open_window=open_window)


if __name__ == "__main__":
    raise SystemExit(main())
