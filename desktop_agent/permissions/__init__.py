"""Permissions: rules, modes, path checks, Bash command checks, hooks and settings files (SPEC §4, App. B)."""
