"""The shell's operating-system sandbox (``sandbox``): the policy derived from the permission state and the
bubblewrap launcher the Bash tool spawns commands through."""
