"""Pygments → Qt: syntax-highlighted HTML for code blocks and unified diffs, following the palette;
and the look every code view shares: the palette test (``is_dark``), the code font (``mono_font``) and
plain-space copying (``PlainSpacesCopy``).

QTextDocument understands a CSS subset only, so every colour is inline (no classes). Lexers and
formatters are imported explicitly (``pygments.lexers.*``), never through pygments' lazy lookup, so
frozen builds (PyInstaller, Nuitka) find them. Diff colours follow GitHub's conventions (UI-GUIDE).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generator, Iterable

from pygments import lex
from PySide6.QtCore import QCoreApplication, QMimeData
from PySide6.QtGui import QFont, QFontDatabase, QFontInfo, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication, QWidget
from pygments.lexer import Lexer
from pygments.style import Style
from pygments.styles.default import DefaultStyle
from pygments.styles.gh_dark import GhDarkStyle
from pygments.token import Token


# Lexers load on first use (importing all of them costs ~0.2 s at start-up). Each loader is a plain
# ``from pygments.lexers.X import Y`` statement, so PyInstaller and Nuitka still see every module.
def _python() -> type[Lexer]:
    from pygments.lexers.python import PythonLexer
    return PythonLexer


def _typescript() -> type[Lexer]:
    from pygments.lexers.javascript import TypeScriptLexer
    return TypeScriptLexer


def _javascript() -> type[Lexer]:
    from pygments.lexers.javascript import JavascriptLexer
    return JavascriptLexer


def _json() -> type[Lexer]:
    from pygments.lexers.data import JsonLexer
    return JsonLexer


def _yaml() -> type[Lexer]:
    from pygments.lexers.data import YamlLexer
    return YamlLexer


def _toml() -> type[Lexer]:
    from pygments.lexers.configs import TOMLLexer
    return TOMLLexer


def _ini() -> type[Lexer]:
    from pygments.lexers.configs import IniLexer
    return IniLexer


def _markdown() -> type[Lexer]:
    from pygments.lexers.markup import MarkdownLexer
    return MarkdownLexer


def _bash() -> type[Lexer]:
    from pygments.lexers.shell import BashLexer
    return BashLexer


def _c() -> type[Lexer]:
    from pygments.lexers.c_cpp import CLexer
    return CLexer


def _cpp() -> type[Lexer]:
    from pygments.lexers.c_cpp import CppLexer
    return CppLexer


def _go() -> type[Lexer]:
    from pygments.lexers.go import GoLexer
    return GoLexer


def _rust() -> type[Lexer]:
    from pygments.lexers.rust import RustLexer
    return RustLexer


def _java() -> type[Lexer]:
    from pygments.lexers.jvm import JavaLexer
    return JavaLexer


def _kotlin() -> type[Lexer]:
    from pygments.lexers.jvm import KotlinLexer
    return KotlinLexer


def _html() -> type[Lexer]:
    from pygments.lexers.html import HtmlLexer
    return HtmlLexer


def _xml() -> type[Lexer]:
    from pygments.lexers.html import XmlLexer
    return XmlLexer


def _css() -> type[Lexer]:
    from pygments.lexers.css import CssLexer
    return CssLexer


def _sql() -> type[Lexer]:
    from pygments.lexers.sql import SqlLexer
    return SqlLexer


def _diff() -> type[Lexer]:
    from pygments.lexers.diff import DiffLexer
    return DiffLexer


def _text() -> type[Lexer]:
    from pygments.lexers.special import TextLexer
    return TextLexer


MONO_FALLBACK = "DejaVu Sans Mono"
# After the system fixed font, in this order (``mono_font`` checks each is fixed-pitch).
MONO_FAMILIES = ("DejaVu Sans Mono", "Noto Sans Mono", "Liberation Mono")

_BY_EXT: dict[str, Any] = {
    "py": _python, "pyi": _python, "ts": _typescript, "tsx": _typescript, "js": _javascript, "jsx": _javascript,
    "mjs": _javascript, "cjs": _javascript, "json": _json, "yml": _yaml, "yaml": _yaml, "toml": _toml, "ini": _ini,
    "cfg": _ini, "md": _markdown, "sh": _bash, "bash": _bash, "zsh": _bash, "c": _c, "h": _c, "cc": _cpp,
    "cpp": _cpp, "hpp": _cpp, "go": _go, "rs": _rust, "java": _java, "kt": _kotlin, "html": _html, "htm": _html,
    "xml": _xml, "css": _css, "sql": _sql, "diff": _diff, "patch": _diff,
}
_BY_LANG: dict[str, Any] = {
    "python": _python, "py": _python, "typescript": _typescript, "ts": _typescript, "javascript": _javascript,
    "js": _javascript, "json": _json, "yaml": _yaml, "toml": _toml, "bash": _bash, "sh": _bash, "shell": _bash,
    "console": _bash, "c": _c, "cpp": _cpp, "go": _go, "rust": _rust, "java": _java, "kotlin": _kotlin,
    "html": _html, "xml": _xml, "css": _css, "sql": _sql, "diff": _diff, "markdown": _markdown, "md": _markdown,
    "ini": _ini,
}


@dataclass(frozen=True)
class DiffColors:
    added_bg: str
    added_fg: str
    added_gutter: str
    removed_bg: str
    removed_fg: str
    removed_gutter: str
    hunk_bg: str
    hunk_fg: str
    gutter_fg: str
    code_bg: str
    text: str
    muted: str
    accent: str
    border: str
    error: str


LIGHT = DiffColors(
    added_bg="#e6ffec", added_fg="#1a7f37", added_gutter="#ccffd8",
    removed_bg="#ffebe9", removed_fg="#cf222e", removed_gutter="#ffd7d5",
    hunk_bg="#ddf4ff", hunk_fg="#57606a", gutter_fg="#8c959f", code_bg="#f6f8fa",
    text="#1f2328", muted="#656d76", accent="#bf8700", border="#d0d7de", error="#cf222e",
)
DARK = DiffColors(
    added_bg="#12261e", added_fg="#3fb950", added_gutter="#1b4721",
    removed_bg="#25171c", removed_fg="#f85149", removed_gutter="#542426",
    hunk_bg="#121d2f", hunk_fg="#8b949e", gutter_fg="#6e7681", code_bg="#161b22",
    text="#e6edf3", muted="#8b949e", accent="#d29922", border="#30363d", error="#f85149",
)


def colors(dark: bool) -> DiffColors:
    return DARK if dark else LIGHT


def lexer_for_filename(path: str | None) -> Lexer:
    ext = (path or "").rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower() if path and "." in path else ""
    return _cached_lexer(_BY_EXT.get(ext, _text))


def lexer_for_language(lang: str | None) -> Lexer:
    return _cached_lexer(_BY_LANG.get((lang or "").strip().lower(), _text))


@lru_cache(maxsize=None)
def _cached_lexer(loader: Any) -> Lexer:
    return loader()(stripnl=False, ensurenl=False)


def _style(dark: bool) -> type[Style]:
    return GhDarkStyle if dark else DefaultStyle


@lru_cache(maxsize=4096)
def _token_css(ttype: Any, dark: bool) -> str:
    st = _style(dark).style_for_token(ttype)
    parts = []
    if st.get("color"):
        parts.append(f"color:#{st['color']}")
    if st.get("bold"):
        parts.append("font-weight:600")
    if st.get("italic"):
        parts.append("font-style:italic")
    return ";".join(parts)


def highlight_lines_steps(text: str, lexer: Lexer, dark: bool, every: int = 0) -> Generator[None, None, list[str]]:
    """``highlight_lines`` as a generator that yields after every ``every`` tokens (0: never), so a
    caller on the Qt thread can lex a long text in slices with the lexer's state intact."""
    lines: list[list[str]] = [[]]
    count = 0
    for ttype, value in lex(text, lexer):
        css = "" if ttype in Token.Text else _token_css(ttype, dark)
        pieces = value.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                lines.append([])
            if piece:
                esc = html.escape(piece, quote=False).replace(" ", "&nbsp;").replace("\t", "&nbsp;" * 4)
                lines[-1].append(f'<span style="{css}">{esc}</span>' if css else esc)
        count += 1
        if every and count % every == 0:
            yield
    out = ["".join(parts) for parts in lines]
    # lex() ensures a trailing newline; drop the empty line it adds when the text had none.
    want = text.count("\n") + 1
    return out[:want] + [""] * (want - len(out[:want]))


def run_steps(steps: Generator[None, None, Any]) -> Any:
    """Drive a ``*_steps`` generator to its end at once and return its value."""
    while True:
        try:
            next(steps)
        except StopIteration as stop:
            return stop.value


def highlight_lines(text: str, lexer: Lexer, dark: bool) -> list[str]:
    """Highlight ``text`` and return one HTML fragment per line (inline styles, entities escaped)."""
    return run_steps(highlight_lines_steps(text, lexer, dark))


def highlight_code_html(code: str, lang: str | None, dark: bool, font_family: str = MONO_FALLBACK) -> str:
    """A code block as a <pre>-like HTML fragment (used inside the conversation's Markdown)."""
    lexer = lexer_for_language(lang)
    body = "<br/>".join(highlight_lines(code.rstrip("\n"), lexer, dark))
    return f'<span style="font-family:\'{font_family}\'; white-space:pre">{body}</span>'


def _hunk_get(hunk: dict[str, Any], camel: str, snake: str, default: int = 0) -> int:
    value = hunk.get(camel, hunk.get(snake, default))
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def normalize_hunks(hunks: Iterable[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Accept camelCase (``oldStart``) or snake_case (``old_start``) hunks; return camelCase."""
    out = []
    for h in hunks or []:
        out.append({
            "oldStart": _hunk_get(h, "oldStart", "old_start", 1), "oldLines": _hunk_get(h, "oldLines", "old_lines"),
            "newStart": _hunk_get(h, "newStart", "new_start", 1), "newLines": _hunk_get(h, "newLines", "new_lines"),
            "lines": [str(x) for x in h.get("lines", [])],
        })
    return out


def count_changes(hunks: Iterable[dict[str, Any]]) -> tuple[int, int]:
    added = removed = 0
    for h in hunks:
        for line in h.get("lines", []):
            if line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
    return added, removed


def hunks_for_new_file(content: str) -> list[dict[str, Any]]:
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return [{"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": len(lines), "lines": ["+" + x for x in lines]}]


# Diff lines rendered per change; the rest is summarised in one line. QTextDocument parses ~15,000
# styled lines a second here, on the Qt thread: 1,000 lines keep a big change's display to ~65 ms.
DIFF_MAX_LINES = 1000


@lru_cache(maxsize=8)
def _char_width(font_family: str) -> float:
    """The advance of one character of the monospace font (the diff gutter's hanging indent)."""
    from PySide6.QtGui import QFont, QFontMetricsF

    return QFontMetricsF(QFont(font_family)).horizontalAdvance("0")


def diff_line_count(hunks: Iterable[dict[str, Any]]) -> int:
    return sum(len(h.get("lines", ())) for h in hunks)


def diff_html(hunks: list[dict[str, Any]], file_path: str | None, dark: bool,
              font_family: str = MONO_FALLBACK, max_lines: int = DIFF_MAX_LINES) -> str:
    """A unified diff as HTML, at once (see ``diff_html_steps``)."""
    return run_steps(diff_html_steps(hunks, file_path, dark, font_family, max_lines))


def diff_html_steps(hunks: list[dict[str, Any]], file_path: str | None, dark: bool,
                    font_family: str = MONO_FALLBACK, max_lines: int = DIFF_MAX_LINES,
                    every: int = 0) -> Generator[None, None, str]:
    """A unified diff as HTML: old/new line numbers in the gutter, GitHub-like colours, syntax
    highlighting by file type. ``hunks`` are structured-patch hunks (normalised). A generator that
    yields every ``every`` lexer tokens (0: never) and returns the HTML, so ``DiffRenderer`` can
    build a big diff in slices on the Qt thread between other events.

    One paragraph per line, not a table: QTextDocument lays out a 4,000-row table ~7× slower than
    4,000 paragraphs (1.26 s vs 0.17 s here), and the block background spans the whole width anyway.
    The gutter is two right-aligned number columns in the monospace font. At most ``max_lines`` diff
    lines are rendered (hunks past the cap are not even lexed); a last line says what was left out."""
    c = colors(dark)
    lexer = lexer_for_filename(file_path)
    top = max([h["oldStart"] + h["oldLines"] for h in hunks] + [h["newStart"] + h["newLines"] for h in hunks] + [1])
    width = len(str(top))
    blank = "&nbsp;" * width

    def num(n: int | None) -> str:
        return blank if n is None else f"{n:>{width}}".replace(" ", "&nbsp;")

    indent = round(_char_width(font_family) * (2 * width + 7))
    hang = f"margin-left:{indent}px; text-indent:-{indent}px"

    def row(bg: str | None, gutter_bg: str | None, old: int | None, new: int | None, mark: str, code: str) -> str:
        gbg = f"; background-color:{gutter_bg}" if gutter_bg else ""
        # pre-wrap: a view that wraps (the changes panel) wraps a long line under its code (a hanging indent the
        # width of the gutter and the mark); a NoWrap view keeps it whole
        style = f"margin:0; white-space:pre-wrap; {hang}" + (f"; background-color:{bg}" if bg else "")
        return (f'<p style="{style}"><span style="color:{c.gutter_fg}{gbg}">&nbsp;{num(old)}&nbsp;&nbsp;{num(new)}'
                f"&nbsp;</span>&nbsp;{mark}&nbsp;{code}</p>")

    rows: list[str] = []
    shown = 0
    for hunk in hunks:
        if shown >= max_lines:
            break
        lines = hunk["lines"][: max_lines - shown]
        header = f"@@ -{hunk['oldStart']},{hunk['oldLines']} +{hunk['newStart']},{hunk['newLines']} @@"
        rows.append(f'<p style="margin:0; padding:2px 0; white-space:pre; background-color:{c.hunk_bg}; '
                    f'color:{c.hunk_fg}">&nbsp;{blank}&nbsp;&nbsp;{blank}&nbsp;&nbsp;&nbsp;{html.escape(header)}</p>')
        # Highlight old-side and new-side text separately so multi-line tokens keep their state.
        old_text = "\n".join(x[1:] for x in lines if not x.startswith("+") and not x.startswith("\\"))
        new_text = "\n".join(x[1:] for x in lines if not x.startswith("-") and not x.startswith("\\"))
        old_hl = yield from highlight_lines_steps(old_text, lexer, dark, every)
        new_hl = yield from highlight_lines_steps(new_text, lexer, dark, every)
        if every:
            yield  # and after every hunk: a diff of many small hunks yields as often
        oi = ni = 0
        old_no, new_no = hunk["oldStart"], hunk["newStart"]
        for line in lines:
            shown += 1
            sign = line[:1]
            if sign == "\\":
                rows.append(f'<p style="margin:0; white-space:pre-wrap; color:{c.muted}">&nbsp;{blank}&nbsp;&nbsp;{blank}'
                            f"&nbsp;&nbsp;&nbsp;{html.escape(line)}</p>")
            elif sign == "+":
                code = new_hl[ni] if ni < len(new_hl) else ""
                ni += 1
                rows.append(row(c.added_bg, c.added_gutter, None, new_no, f'<span style="color:{c.added_fg}">+</span>',
                                code))
                new_no += 1
            elif sign == "-":
                code = old_hl[oi] if oi < len(old_hl) else ""
                oi += 1
                rows.append(row(c.removed_bg, c.removed_gutter, old_no, None,
                                f'<span style="color:{c.removed_fg}">\u2212</span>', code))
                old_no += 1
            else:
                code = new_hl[ni] if ni < len(new_hl) else ""
                oi += 1
                ni += 1
                rows.append(row(None, None, old_no, new_no, "&nbsp;", code))
                old_no += 1
                new_no += 1
    total = diff_line_count(hunks)
    if total > shown:
        note = QCoreApplication.translate("Highlight", "… {0} more lines of this change are not shown ({1} shown)")
        rows.append(f'<p style="margin:0; padding:4px 0; color:{c.muted}">&nbsp;'
                    f"{html.escape(note.format(f'{total - shown:,}', f'{shown:,}'))}</p>")
    return f'<div style="font-family:\'{font_family}\'; color:{c.text}">' + "".join(rows) + "</div>"


# ----- the look code views share: palette, code font, copying ------------------------------------
def is_dark(widget: QWidget | None = None) -> bool:
    """Whether the application palette is dark (widget palettes can be altered by style sheets)."""
    return QApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


_MONO: list[QFont] = []


def is_fixed_pitch(font: QFont) -> bool:
    """Whether the font Qt actually uses for ``font`` is fixed-pitch: ``QFontInfo.fixedPitch()`` and,
    because some CJK fonts claim it while their Latin letters are proportional, equal advances."""
    if not QFontInfo(font).fixedPitch():
        return False
    fm = QFontMetrics(font)
    return len({fm.horizontalAdvance(ch) for ch in "iMW .0"}) == 1


def mono_candidates() -> list[QFont]:
    """The code font's fallback chain: the system fixed font, then named monospace families, then
    whatever fontconfig gives the Monospace style hint."""
    system = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    out = [system]
    for family in MONO_FAMILIES:
        f = QFont(family)
        f.setPointSizeF(system.pointSizeF() if system.pointSizeF() > 0 else 10)
        out.append(f)
    hinted = QFont("Monospace")
    hinted.setStyleHint(QFont.StyleHint.Monospace)
    out.append(hinted)
    return out


def mono_font() -> QFont:
    """The code font (conversation code blocks, tool output, diffs in the dialog and the panel): the
    first of ``mono_candidates()`` that is really fixed-pitch, as the family Qt resolved it to (so the
    HTML's ``font-family`` names a concrete font, not an alias a locale can remap — under zh_CN
    "monospace" can resolve to a CJK font with proportional Latin letters). A fresh copy each call."""
    if not _MONO:
        chosen = None
        for cand in mono_candidates():
            if is_fixed_pitch(cand):
                chosen = QFont(cand)
                chosen.setFamilies([QFontInfo(cand).family()])
                break
        if chosen is None:  # no fixed-pitch font installed at all: the best Qt can do
            chosen = mono_candidates()[-1]
        chosen.setStyleHint(QFont.StyleHint.Monospace)
        chosen.setFixedPitch(True)
        _MONO.append(chosen)
    return QFont(_MONO[0])


class PlainSpacesCopy:
    """Mixin for text views of rendered code and diffs: a selection's plain text copies with plain
    spaces (the HTML rendering keeps indentation with non-breaking spaces, which break pasted code);
    the rich text copy is kept for rich editors."""

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 - Qt naming
        # Qt's own object, edited: a QMimeData made in Python and handed to the clipboard is freed
        # twice at exit (a segfault seen here with PySide6 6.12).
        # A mixin of QTextEdit and QPlainTextEdit subclasses (no common base has the method): the view class after
        # it in the MRO has it.
        data = super().createMimeDataFromSelection()  # type: ignore[misc]
        data.setText(data.text().replace("\u00a0", " "))
        return data
