"""Grep's page of the mtime order (a heap over the head) equals the page of the full sort, ties included."""

from __future__ import annotations

import random

from desktop_agent.tools.grep import DEFAULT_HEAD_LIMIT, _ContentCollector, _page, apply_head_limit
from desktop_agent.tools.ripgrep import NewestFirst


def _filled(n: int, seed: int) -> NewestFirst:
    rng = random.Random(seed)
    files = NewestFirst("/nonexistent-root")
    files.keys = [(-float(rng.randint(0, 20)), f"d{rng.randint(0, 3)}/f{i:04d}") for i in range(n)]
    rng.shuffle(files.keys)
    return files


def test_first_and_page_equal_full_sort() -> None:
    for n in (0, 1, 7, 300, 2500):
        for limit in (None, 0, 1, 5, 250, 5000):
            for offset in (0, 3, 299, 4000):
                files = _filled(n, n + offset)
                full = sorted(files.keys)
                items = [p for _, p in full]
                need = None if limit == 0 else offset + (DEFAULT_HEAD_LIMIT if limit is None else limit)
                head = files.first(need)
                assert head == items[:need] if need is not None else head == items
                assert _page(head, n, limit, offset) == apply_head_limit(items, limit, offset)
                assert list(_filled(n, n + offset).iter_ordered()) == items


def test_content_head_counts_separators() -> None:
    for context in (False, True):
        c = _ContentCollector("/nonexistent-root", context)
        rng = random.Random(5)
        for i in range(400):
            path = f"f{i:03d}"
            c.files.keys.append((-float(rng.randint(0, 9)), path))
            c.blocks[path] = [f"{path}\x00:{k}\x00:x" for k in range(rng.randint(1, 4))]
        every = c.lines()
        for need in (None, 0, 1, 10, 251, 5000):
            head, total = c.head(need)
            assert total == len(every)
            assert head == (every if need is None else every[:need])
