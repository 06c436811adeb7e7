"""PyInstaller entry point of the bundled app: the same ``main()`` as the ``desktop-agent`` command."""

import sys

from desktop_agent.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
