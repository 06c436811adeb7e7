"""Pygments → Qt: syntax-highlighted HTML for code blocks and unified diffs, following the palette.

QTextDocument understands a CSS subset only, so every colour is inline (no classes). Lexers and
formatters are imported explicitly (``pygments.lexers.*``), never through pygments' lazy lookup, so
frozen builds (PyInstaller, Nuitka) find them. Diff colours follow GitHub's conventions (UI-GUIDE).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable

from pygments import lex
from PySide6.QtCore import QCoreApplication
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


def highlight_lines(text: str, lexer: Lexer, dark: bool) -> list[str]:
    """Highlight ``text`` and return one HTML fragment per line (inline styles, entities escaped)."""
    lines: list[list[str]] = [[]]
    for ttype, value in lex(text, lexer):
        css = "" if ttype in Token.Text else _token_css(ttype, dark)
        pieces = value.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                lines.append([])
            if piece:
                esc = html.escape(piece, quote=False).replace(" ", "&nbsp;").replace("\t", "&nbsp;" * 4)
                lines[-1].append(f'<span style="{css}">{esc}</span>' if css else esc)
    out = ["".join(parts) for parts in lines]
    # lex() ensures a trailing newline; drop the empty line it adds when the text had none.
    want = text.count("\n") + 1
    return out[:want] + [""] * (want - len(out[:want]))


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


def diff_table_html(hunks: list[dict[str, Any]], file_path: str | None, dark: bool,
                    font_family: str = MONO_FALLBACK, max_lines: int = 4000) -> str:
    """A unified diff as an HTML table: old/new line numbers in the gutter, GitHub-like colours,
    syntax highlighting by file type. ``hunks`` are structured-patch hunks (normalised)."""
    c = colors(dark)
    lexer = lexer_for_filename(file_path)
    rows: list[str] = []
    shown = 0
    top = max([h["oldStart"] + h["oldLines"] for h in hunks] + [h["newStart"] + h["newLines"] for h in hunks] + [1])
    gw = 8 * len(str(top)) + 16  # gutter width in px: digits of the largest line number plus padding
    gutter = f"color:{c.gutter_fg}; padding:0 6px; text-align:right"
    for hunk in hunks:
        lines = hunk["lines"]
        header = f"@@ -{hunk['oldStart']},{hunk['oldLines']} +{hunk['newStart']},{hunk['newLines']} @@"
        rows.append(
            f'<tr style="background-color:{c.hunk_bg}"><td width="{gw}" style="{gutter}"></td><td width="{gw}" style="{gutter}"></td>'
            f'<td style="color:{c.hunk_fg}; padding:2px 8px">{html.escape(header)}</td></tr>'
        )
        # Highlight old-side and new-side text separately so multi-line tokens keep their state.
        old_text = "\n".join(x[1:] for x in lines if not x.startswith("+") and not x.startswith("\\"))
        new_text = "\n".join(x[1:] for x in lines if not x.startswith("-") and not x.startswith("\\"))
        old_hl = highlight_lines(old_text, lexer, dark)
        new_hl = highlight_lines(new_text, lexer, dark)
        oi = ni = 0
        old_no, new_no = hunk["oldStart"], hunk["newStart"]
        for line in lines:
            if shown >= max_lines:
                break
            shown += 1
            sign = line[:1]
            if sign == "\\":
                rows.append(f'<tr><td></td><td></td><td style="color:{c.muted}; padding:0 8px">'
                            f"{html.escape(line)}</td></tr>")
                continue
            if sign == "+":
                code = new_hl[ni] if ni < len(new_hl) else ""
                ni += 1
                rows.append(
                    f'<tr style="background-color:{c.added_bg}"><td width="{gw}" style="{gutter}; background-color:{c.added_gutter}">'
                    f'</td><td width="{gw}" style="{gutter}; background-color:{c.added_gutter}">{new_no}</td>'
                    f'<td style="padding:0 8px; white-space:pre"><span style="color:{c.added_fg}">+</span>&nbsp;{code}'
                    f"</td></tr>"
                )
                new_no += 1
            elif sign == "-":
                code = old_hl[oi] if oi < len(old_hl) else ""
                oi += 1
                rows.append(
                    f'<tr style="background-color:{c.removed_bg}"><td width="{gw}" style="{gutter}; background-color:'
                    f'{c.removed_gutter}">{old_no}</td><td width="{gw}" style="{gutter}; background-color:{c.removed_gutter}"></td>'
                    f'<td style="padding:0 8px; white-space:pre"><span style="color:{c.removed_fg}">\u2212</span>'
                    f"&nbsp;{code}</td></tr>"
                )
                old_no += 1
            else:
                code = new_hl[ni] if ni < len(new_hl) else ""
                oi += 1
                ni += 1
                rows.append(
                    f'<tr><td width="{gw}" style="{gutter}">{old_no}</td><td width="{gw}" style="{gutter}">{new_no}</td>'
                    f'<td style="padding:0 8px; white-space:pre">&nbsp;&nbsp;{code}</td></tr>'
                )
                old_no += 1
                new_no += 1
    if shown >= max_lines:
        rows.append(f'<tr><td></td><td></td><td style="color:{c.muted}; padding:4px 8px">'
                    f"{html.escape(QCoreApplication.translate('Highlight', '… diff truncated for display ({0} lines shown)').format(shown))}"
                    "</td></tr>")
    return (
        f'<table width="100%" cellspacing="0" cellpadding="0" style="font-family:\'{font_family}\'; '
        f'color:{c.text}; border-collapse:collapse">' + "".join(rows) + "</table>"
    )
