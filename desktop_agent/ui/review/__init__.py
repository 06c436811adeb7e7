"""The review view of a worktree session: its whole change per file and per hunk, Apply / Discard / Keep."""
