"""Git without the programs a repository's own config can start (``core.fsmonitor``, ``core.pager``,
``diff.external``, hooks, credential helpers, …): ``git_safety_env(env)`` adds ``GIT_CONFIG_COUNT``
overrides, which git applies after every config file. Used by the Bash tool's shells in untrusted folders
(``permissions.sandbox``) and by every git command the app itself runs (the session-start status summary),
so a cloned repository cannot run code before anyone trusted it. Filter, textconv, merge drivers and
``pager.<cmd>`` cannot be listed generically; the sandbox contains those.
"""

from __future__ import annotations

_EXT_DIFF = "sh -c 'diff -u --label \"a/$1\" --label \"b/$1\" -- \"$2\" \"$5\"; exit 0' --"
GIT_OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("diff.external", _EXT_DIFF),
    ("core.sshCommand", "ssh"),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
    ("credential.helper", ""),
    ("core.editor", "true"),
    ("sequence.editor", "true"),
    ("core.askPass", ""),
    ("core.gitProxy", "none"),
    ("protocol.ext.allow", "never"),
)


def git_safety_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` plus GIT_CONFIG_COUNT overrides that stop repository config from starting programs."""
    out = dict(env)
    try:
        n = max(0, int(out.get("GIT_CONFIG_COUNT") or 0))
    except ValueError:
        n = 0
    for key, value in GIT_OVERRIDES:
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
        n += 1
    out["GIT_CONFIG_COUNT"] = str(n)
    out["GIT_PAGER"] = "cat"
    return out
