"""Structured patches: the hunks Edit and Write return and the permission dialog / diff panel show.

Owns ``structured_patch(old, new, context=3)`` → ``[{oldStart, oldLines, newStart, newLines, lines}]``,
shaped like the ``diff`` npm package's ``structuredPatch`` (SPEC B.1 ``FileEditOutput``): lines are
prefixed ``" "`` (context), ``"-"`` (removed) or ``"+"`` (added), removals before additions in a
change, hunks closer than 2×context lines merged. Unlike jsdiff we do not emit
``\\ No newline at end of file`` marker lines: a changed final newline shows as ``-x`` / ``+x``.

Speed: the common prefix and suffix of the two texts are found with C-level slice comparisons and
never split into lines, so an edit in a 100,000-line file diffs only the changed lines. The middle
part is anchored on lines unique to both sides (patience diff) and only the gaps between anchors go
through difflib's ``SequenceMatcher``.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from typing import Any

Hunk = dict[str, Any]

_NOEOL = "\x00<no newline at end of file>"


def _common_prefix_len(a: str, b: str, known: int = 0) -> int:
    lo, hi = min(known, len(a), len(b)), min(len(a), len(b))
    step = 4096
    # Gallop forward in growing chunks, then binary-search inside the first differing chunk.
    while lo < hi:
        end = min(hi, lo + step)
        if a[lo:end] == b[lo:end]:
            lo = end
            step *= 2
            continue
        hi = end - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a[lo:mid] == b[lo:mid]:
                lo = mid
            else:
                hi = mid - 1
        break
    return lo


def _common_suffix_len(a: str, b: str, max_len: int, known: int = 0) -> int:
    lo, hi = min(known, max_len), max_len
    la, lb = len(a), len(b)
    step = 4096
    while lo < hi:
        end = min(hi, lo + step)
        if a[la - end:la - lo] == b[lb - end:lb - lo]:
            lo = end
            step *= 2
            continue
        hi = end - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
                lo = mid
            else:
                hi = mid - 1
        break
    return lo


def _lines(region: str, at_eof: bool) -> tuple[list[str], list[str]]:
    """(display lines, comparison keys). A final line without newline at EOF gets a distinct key."""
    if not region:
        return [], []
    parts = region.split("\n")
    if parts[-1] == "":
        parts.pop()
        return parts, parts
    keys = parts
    if at_eof:  # the file's last line has no newline: it differs from the same text with one
        keys = parts[:-1] + [parts[-1] + _NOEOL]
    return parts, keys


def _tail_lines(text: str, end: int, count: int) -> list[str]:
    """Up to ``count`` whole lines ending just before ``end`` (``text[end-1]`` is a newline or end == 0)."""
    out: list[str] = []
    pos = end - 1  # index of the newline that ends the last line
    while pos >= 0 and len(out) < count:
        start = text.rfind("\n", 0, pos) + 1
        out.append(text[start:pos])
        pos = start - 1
    out.reverse()
    return out


def _head_lines(text: str, start: int, count: int) -> list[str]:
    out: list[str] = []
    pos = start
    while pos < len(text) and len(out) < count:
        nl = text.find("\n", pos)
        if nl == -1:
            out.append(text[pos:])
            break
        out.append(text[pos:nl])
        pos = nl + 1
    return out


def _group(codes: list[tuple[str, int, int, int, int]], n: int) -> list[list[tuple[str, int, int, int, int]]]:
    """difflib's ``get_grouped_opcodes`` on a given opcode list."""
    codes = list(codes)
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - n), i2, max(j1, j2 - n), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)
    nn = n + n
    groups = []
    group: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > nn:
            group.append((tag, i1, min(i2, i1 + n), j1, min(j2, j1 + n)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - n), max(j1, j2 - n)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


Opcode = tuple[str, int, int, int, int]


def _difflib_opcodes(a: list[str], b: list[str], i0: int = 0, j0: int = 0) -> list[Opcode]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=len(a) + len(b) > 4000)
    return [(t, i1 + i0, i2 + i0, j1 + j0, j2 + j0) for t, i1, i2, j1, j2 in matcher.get_opcodes()]


def _anchors(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Patience anchors: lines occurring once in each list, kept in a longest increasing run."""
    count_a = Counter(a)
    count_b = Counter(b)
    where_b = {line: j for j, line in enumerate(b) if count_b[line] == 1}
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if count_a[line] == 1 and line in where_b]
    if not pairs:
        return []
    # Longest increasing subsequence of the b indexes (pairs are in a order), patience sorting.
    tails: list[int] = []  # tails[k] = index into pairs of the smallest tail of a run of length k+1
    prev = [-1] * len(pairs)
    tail_js: list[int] = []
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tail_js, j)
        if pos:
            prev[k] = tails[pos - 1]
        if pos == len(tails):
            tails.append(k)
            tail_js.append(j)
        else:
            tails[pos] = k
            tail_js[pos] = j
    out = []
    k = tails[-1]
    while k != -1:
        out.append(pairs[k])
        k = prev[k]
    out.reverse()
    return out


def line_opcodes(a: list[str], b: list[str]) -> list[Opcode]:
    """difflib-style opcodes for two line lists.

    Lines unique to both sides anchor the diff (patience diff); only the gaps between anchors go
    through ``SequenceMatcher``, which keeps large files with scattered changes fast (difflib alone
    is roughly quadratic in the number of changed blocks) and gives code-friendly hunks.
    """
    if len(a) + len(b) <= 200:
        return _difflib_opcodes(a, b)
    anchors = _anchors(a, b)
    if not anchors:
        return _difflib_opcodes(a, b)
    codes: list[Opcode] = []
    i = j = 0
    for ai, bj in anchors + [(len(a), len(b))]:
        if ai > i or bj > j:
            if ai > i and bj > j:
                codes.extend(_difflib_opcodes(a[i:ai], b[j:bj], i, j))
            elif ai > i:
                codes.append(("delete", i, ai, j, j))
            else:
                codes.append(("insert", i, i, j, bj))
        if ai < len(a):
            codes.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    merged: list[Opcode] = []
    for code in codes:
        if merged and code[0] == "equal" and merged[-1][0] == "equal":
            t, i1, _, j1, _ = merged[-1]
            merged[-1] = (t, i1, code[2], j1, code[4])
        else:
            merged.append(code)
    return merged


def structured_patch(old: str, new: str, context: int = 3, *, same_prefix: int = 0,
                     same_suffix: int = 0) -> list[Hunk]:
    """Hunks turning ``old`` into ``new`` (both with ``\\n`` line endings). ``[]`` when equal.

    ``same_prefix`` / ``same_suffix``: lengths the caller knows to be equal at the start / end of
    both texts (an Edit knows where it spliced), so they are not compared again.
    """
    if old == new:
        return []
    if old == "" or new == "":  # a new file or an emptied one: one hunk of every line (a 20,000-line
        # new file took 0.1 s through the general path, holding the GIL on the worker thread)
        whole = [("+" if old == "" else "-") + x for x in _lines(new or old, True)[0]]
        n = len(whole)
        return [{"oldStart": 1, "oldLines": 0 if old == "" else n, "newStart": 1, "newLines": n if old == "" else 0,
                 "lines": whole}]
    # Common prefix, cut back to a line start.
    k = _common_prefix_len(old, new, same_prefix)
    cut = old.rfind("\n", 0, k) + 1
    prefix_lines = old.count("\n", 0, cut)
    # Common suffix (not overlapping the prefix), cut forward so both sides start it at a line start.
    m = _common_suffix_len(old, new, min(len(old), len(new)) - cut, same_suffix)
    s_old = len(old) - m
    nl = old.find("\n", s_old)
    s_old = len(old) if nl == -1 else nl + 1
    s_new = s_old + (len(new) - len(old))

    a_lines, a_keys = _lines(old[cut:s_old], s_old == len(old))
    b_lines, b_keys = _lines(new[cut:s_new], s_new == len(new))
    before = _tail_lines(old, cut, context)
    after_old = _head_lines(old, s_old, context)
    after_new = _head_lines(new, s_new, context)

    nb = len(before)
    codes: list[tuple[str, int, int, int, int]] = []
    if nb:
        codes.append(("equal", 0, nb, 0, nb))
    for tag, i1, i2, j1, j2 in line_opcodes(a_keys, b_keys):
        codes.append((tag, i1 + nb, i2 + nb, j1 + nb, j2 + nb))
    na, nbb = nb + len(a_lines), nb + len(b_lines)
    if after_old:
        codes.append(("equal", na, na + len(after_old), nbb, nbb + len(after_new)))
    # Merge adjacent equal runs (the prefix tail can meet an equal run of the middle).
    merged: list[tuple[str, int, int, int, int]] = []
    for code in codes:
        if merged and code[0] == "equal" and merged[-1][0] == "equal":
            t, i1, _, j1, _ = merged[-1]
            merged[-1] = (t, i1, code[2], j1, code[4])
        elif code[1] != code[2] or code[3] != code[4]:
            merged.append(code)
    if not merged:
        return []

    a_all = before + a_lines + after_old
    b_all = before + b_lines + after_new
    base = prefix_lines - nb  # line index (0-based) of a_all[0] / b_all[0] in the files
    hunks: list[Hunk] = []
    for group in _group(merged, context):
        lines: list[str] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines.extend(" " + x for x in a_all[i1:i2])
                continue
            if tag in ("replace", "delete"):
                lines.extend("-" + x for x in a_all[i1:i2])
            if tag in ("replace", "insert"):
                lines.extend("+" + x for x in b_all[j1:j2])
        first, last = group[0], group[-1]
        hunks.append({
            "oldStart": base + first[1] + 1,
            "oldLines": last[2] - first[1],
            "newStart": base + first[3] + 1,
            "newLines": last[4] - first[3],
            "lines": lines,
        })
    return hunks


def format_unified(hunks: list[Hunk], path: str = "") -> str:
    """The hunks as unified-diff text (for logs and plain-text front ends)."""
    out = [f"--- {path}", f"+++ {path}"] if path else []
    for h in hunks:
        out.append(f"@@ -{h['oldStart']},{h['oldLines']} +{h['newStart']},{h['newLines']} @@")
        out.extend(h["lines"])
    return "\n".join(out)


# ---------------------------------------------------------------- a decision per hunk


def split_lines_keepends(text: str) -> list[str]:
    """``text`` as lines that keep their ``\\n`` (only ``\\n`` splits, as in ``structured_patch``)."""
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def hunk_old_range(hunk: Hunk) -> tuple[int, int]:
    """The hunk's lines in the original file, 1-based and inclusive, as its header names them."""
    start, count = int(hunk["oldStart"]), int(hunk["oldLines"])
    if count <= 0:
        return max(start, 1), max(start, 1)
    return start, start + count - 1


def apply_hunks(old: str, new: str, hunks: list[Hunk], accepted: list[bool]) -> str:
    """``old`` with only the accepted hunks of ``hunks`` (= ``structured_patch(old, new)``) applied.

    Works on line indexes, not on the hunks' text lines, so final newlines come out exactly: all
    accepted gives ``new``, none gives ``old``. Outside the hunks both texts are equal.
    """
    if len(accepted) != len(hunks):
        raise ValueError("one decision per hunk")
    if all(accepted):
        return new
    if not any(accepted):
        return old
    a, b = split_lines_keepends(old), split_lines_keepends(new)
    out: list[str] = []
    pos = 0
    offset = 0  # lines the previous hunks added (new - old)
    for hunk, take in zip(hunks, accepted):
        n_old, n_new = int(hunk["oldLines"]), int(hunk["newLines"])
        if n_old > 0:
            oi = int(hunk["oldStart"]) - 1
            ni = oi + offset
        else:  # an insertion: jsdiff's oldStart convention differs; the new side is exact
            ni = int(hunk["newStart"]) - 1
            oi = ni - offset
        out.extend(a[pos:oi])
        out.extend(b[ni:ni + n_new] if take else a[oi:oi + n_old])
        pos = oi + n_old
        offset += n_new - n_old
    out.extend(a[pos:])
    return "".join(out)


def format_line_ranges(ranges: list[tuple[int, int]]) -> str:
    """``lines 12–18, 40–41`` (en dash); ``line 7`` for a single line."""
    parts = [f"{a}\u2013{b}" if b > a else f"{a}" for a, b in ranges]
    word = "line" if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else "lines"
    return f"{word} {', '.join(parts)}"


def rejected_hunks_sentence(ranges: list[tuple[int, int]], total: int) -> str:
    """What the model is told when the user rejected some hunks of its change."""
    return (f"The user rejected {len(ranges)} of {total} hunks ({format_line_ranges(ranges)}); "
            "those parts were NOT written.")
