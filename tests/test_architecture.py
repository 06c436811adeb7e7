"""The floors of DESIGN.md as import-linter contracts (``.importlinter``), run as part of the suite, and no import
cycle between the package's modules (``test_no_module_level_import_cycle``).

The floors contract lists wave 1's known violations as ignored imports, and an ignored import that no
longer exists is an error, so the list can only shrink; a new upward import fails here.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

from tests.conftest import parse_python

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = pathlib.Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


# ------------------------------------------------------------------------------------------ module-level cycles
def import_graph(root: pathlib.Path, package: str) -> dict[str, dict[str, list[tuple[str, int]]]]:
    """``module → {imported module → [(file, line), ...]}`` over every module of ``package`` under ``root``.

    Every import statement counts wherever it stands (module level, in a function, under ``if TYPE_CHECKING:``,
    in a ``try``), and ``importlib.import_module("<package>...")`` with a literal name. ``from a.b import c`` is
    an edge to ``a.b.c`` when that is a module, else to ``a.b``; relative imports are resolved. An import names
    the module it names: the parent packages Python also initialises on the way are not edges of their own
    (import-linter counts the same way), so a package whose ``__init__`` re-exports is not a cycle by itself.
    """
    modules: dict[str, pathlib.Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, list[tuple[str, int]]]] = {m: {} for m in modules}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        rel = str(path.relative_to(root))
        for node in ast.walk(parse_python(path.read_text("utf-8"), rel)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = module.split(".") if is_package else module.split(".")[:-1]
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)
                  and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"):
                names = [node.args[0].value]
            for name in names:
                target = known(name) if name.split(".")[0] == package else None
                if target is None:
                    continue
                sites = graph[module].setdefault(target, [])
                if (rel, node.lineno) not in sites:  # one site per statement, however many names it imports
                    sites.append((rel, node.lineno))
    return graph


def import_cycles(graph: dict[str, dict[str, list[tuple[str, int]]]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module, or one importing itself
    (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def describe(graph: dict[str, dict[str, list[tuple[str, int]]]], component: list[str], root: pathlib.Path) -> str:
    """A cycle for a failure message: its modules, then every import between them (file:line and the line)."""
    inside = set(component)
    lines = ["cycle: " + " ↔ ".join(component)]
    for a in component:
        for b, sites in sorted(graph[a].items()):
            if b in inside:
                for rel, lineno in sites:
                    text = (root / rel).read_text("utf-8").splitlines()[lineno - 1].strip()
                    lines.append(f"  {a} → {b}  ({rel}:{lineno}: {text})")
    return "\n".join(lines)


def test_no_module_level_import_cycle():
    """No two modules of ``desktop_agent`` import each other, directly or around a loop, and none imports itself:
    the floors contract sees packages, this sees modules (issue 23: the cycles it could not see).

    Imports inside functions and under ``if TYPE_CHECKING:`` count as much as any other: a function-level import
    is one the module makes, only later, and a ``TYPE_CHECKING`` one is a type the module cannot be written
    without. A cycle goes by moving the shared piece down into a module both import, passing a callable or a
    ``Protocol`` written in the lower module instead of importing upward, or merging two modules that are one;
    types that refer to each other (``ToolUseContext`` and the seams whose methods take it) live in one module.

    No exceptions. The window's mixins share one ``self`` declared once in ``ui.window.host_protocol`` (the
    members of the window they use, as types only), not through imports of each other, so that coupling (issue 23:
    the window made of child objects) is not an import cycle and this check does not see it.
    """
    graph = import_graph(ROOT, "desktop_agent")
    found = import_cycles(graph)
    assert found == [], "\n\n".join(describe(graph, c, ROOT) for c in found)
    # The graph is the package's: a broken walk finding no edges would pass the line above.
    assert len(graph) == len(list((ROOT / "desktop_agent").rglob("*.py")))
    assert graph["desktop_agent.engine.loop"].keys() >= {
        "desktop_agent.engine.request", "desktop_agent.engine.params", "desktop_agent.core.context"}


def test_the_cycle_check_sees_hidden_cycles(tmp_path):
    # A throwaway package: a loop closed by a function-level import, one by a TYPE_CHECKING import through a
    # package's __init__ (a relative import), a self-import, and an acyclic module beside them.
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg import b\n",
        "pkg/b.py": "def later():\n    from pkg.c import thing\n",
        "pkg/c.py": "import pkg.a as a\nthing = 1\n",
        "pkg/sub/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..d import D\n",
        "pkg/d.py": "from pkg.sub import x\nD = 1\n",
        "pkg/e.py": "from pkg.e import E\nE = 1\n",
        "pkg/f.py": "import importlib\nimport os\nfrom pkg import a\nimportlib.import_module('pkg.g')\n",
        "pkg/g.py": "from pkg.c import thing\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, "utf-8")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.f"] == {"pkg.a": [("pkg/f.py", 3)], "pkg.g": [("pkg/f.py", 4)]}
    found = import_cycles(graph)
    assert found == [["pkg.a", "pkg.b", "pkg.c"], ["pkg.d", "pkg.sub"], ["pkg.e"]]
    report = describe(graph, found[0], tmp_path)
    assert "pkg.b → pkg.c  (pkg/b.py:2: from pkg.c import thing)" in report
    assert "pkg.sub → pkg.d  (pkg/sub/__init__.py:3: from ..d import D)" in describe(graph, found[1], tmp_path)
