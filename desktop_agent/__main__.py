"""``python -m desktop_agent``: same as the ``desktop-agent`` command."""

from desktop_agent.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
