"""The Bash tool and its background-shell companions BashOutput and KillShell: ``tool`` (BashTool, the foreground
runner), ``background`` (background shells, BashOutputTool, KillShellTool), ``process`` (shell processes and their
groups), ``output`` (capture and formatting)."""
