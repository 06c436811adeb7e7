"""The ``desktop-agent`` command and ``python -m desktop_agent``: the composition root above both front ends.

``desktop_agent.cli`` parses the command line once (``cli.argv``, the one parser): ``-p``/``--print`` runs
headless there; anything else opens the window (``desktop_agent.ui.main``, imported only then, so ``-p`` never
loads Qt) with the parsed ``app.options.WindowOptions``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop_agent.app.options import WindowOptions


def open_window(options: WindowOptions) -> int:
    try:
        from desktop_agent.ui.main import main as ui_main
    except ImportError as exc:
        print(f"desktop-agent: the desktop window is not available: {exc}")
        return 1
    return ui_main(options)


def main(argv: list[str] | None = None) -> int:
    from desktop_agent.cli import main as cli_main

    return cli_main(argv, open_window=open_window)


if __name__ == "__main__":
    raise SystemExit(main())
