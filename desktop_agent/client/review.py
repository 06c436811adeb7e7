"""What a front end asks about worktree sessions and their review (``session.worktrees``, ``session.review``),
each question a coroutine whose git and disk work runs on a worker thread (``util.threads.in_thread``), never on
the caller's (the window's Qt) thread. The window reaches the engine only through ``client/``; these re-export the
review's types so a front end names them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from desktop_agent.util.threads import in_thread

if TYPE_CHECKING:
    from desktop_agent.session.review import Conflict, FileChange, Outcome, Review, Selection, Unit
    from desktop_agent.session.worktrees import CleanupReport, Refused, Worktree, WorktreeError

# The re-exported types are imported when first named (PEP 562), not when the window's modules load at its first paint.
_REVIEW_TYPES = ("Conflict", "FileChange", "Outcome", "Review", "Selection", "Unit")
_WORKTREE_TYPES = ("CleanupReport", "Refused", "Worktree", "WorktreeError")


def __getattr__(name: str) -> Any:
    if name in _REVIEW_TYPES:
        from desktop_agent.session import review

        return getattr(review, name)
    if name in _WORKTREE_TYPES:
        from desktop_agent.session import worktrees

        return getattr(worktrees, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


async def list_worktrees(folder: str) -> list[Worktree]:
    """Our worktree sessions of ``folder``'s repository (none when it is not one)."""
    from desktop_agent.session import worktrees

    def work() -> list[Worktree]:
        try:
            return worktrees.list_worktrees(folder)
        except worktrees.WorktreeError:
            return []
    return await in_thread(work)


async def new_worktree(folder: str, name: str | None = None) -> Worktree:
    from desktop_agent.session import worktrees

    return await in_thread(lambda: worktrees.create(folder, name))


async def archive_worktree(folder: str, slug: str) -> Worktree:
    """Remove the worktree keeping its branch and a snapshot (``Refused`` while locked or in use)."""
    from desktop_agent.session import worktrees

    return await in_thread(lambda: worktrees.archive(folder, slug))


async def restore_worktree(folder: str, slug: str) -> Worktree:
    from desktop_agent.session import worktrees

    return await in_thread(lambda: worktrees.restore(folder, slug))


async def delete_worktree(folder: str, slug: str) -> Worktree:
    """Archive semantics first (snapshot kept, or refused), then the branch goes."""
    from desktop_agent.session import worktrees

    return await in_thread(lambda: worktrees.delete(folder, slug))


async def cleanup_worktrees(folder: str) -> CleanupReport:
    from desktop_agent.session import worktrees

    return await in_thread(lambda: worktrees.cleanup(folder))


async def load_review(folder: str, slug: str) -> Review:
    from desktop_agent.session import review

    return await in_thread(lambda: review.load(folder, slug))


async def apply_review(rv: Review, selected: Selection) -> Outcome:
    from desktop_agent.session import review

    return await in_thread(lambda: review.apply(rv, selected))


async def discard_review(rv: Review, selected: Selection) -> Outcome:
    from desktop_agent.session import review

    return await in_thread(lambda: review.discard(rv, selected))


__all__ = ["CleanupReport", "Conflict", "FileChange", "Outcome", "Refused", "Review", "Selection", "Unit", "Worktree", "WorktreeError",
           "apply_review", "archive_worktree", "cleanup_worktrees", "delete_worktree", "discard_review",
           "list_worktrees", "load_review", "new_worktree", "restore_worktree"]
