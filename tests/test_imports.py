"""Segue's modules import each other without a circle, and the surfaces stay apart: the CLI never imports the
language server (`segue.entry` routes `serve`), the demo and `segue search` never import the CLI, and the core
(`segue.errors`, `segue.limits`, `segue.results`, `segue.service`) imports neither surface."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import segue

ROOT = Path(segue.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(ROOT.rglob("*.py")):
        if "demo_data" in p.parts:
            continue
        parts = ["segue", *p.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The segue modules an import statement loads (a `from pkg import name` of a submodule loads it)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{base}.{node.module}" if node.module else base
        else:
            base = node.module or ""
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:  # `import segue.x.y` names a module, or a name in one
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def imports(module: str, *, top_level_only: bool) -> set[str]:
    """The segue modules `module` imports: at import time only (module body, outside `if TYPE_CHECKING:`,
    not in functions), or anywhere in it."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_targets(module, node))
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                if not top_level_only:
                    walk(node.body)
                walk(node.orelse)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and top_level_only:
                if isinstance(node, ast.ClassDef):
                    walk(node.body)  # a class body runs at import time
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    walk(getattr(node, field, []) or [])
                if isinstance(node, ast.ExceptHandler):
                    walk(node.body)

    if top_level_only:
        walk(tree.body)
    else:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_targets(module, node))
    return found


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*path[path.index(n):], n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_walk_sees_the_packages_modules() -> None:
    assert {"segue.cli", "segue.service", "segue.lsp.server", "segue.stores", "segue.entry"} <= set(MODULES)
    assert "segue.service" in imports("segue.lsp.server", top_level_only=True)
    assert "segue.lsp.server" in imports("segue.entry", top_level_only=False)
    assert "segue.lsp.server" not in imports("segue.entry", top_level_only=True)  # in a function


def test_the_module_level_import_graph_has_no_cycle() -> None:
    graph = {m: imports(m, top_level_only=True) for m in MODULES}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_check_can_fail() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _everything(module: str) -> set[str]:
    return imports(module, top_level_only=False)


def test_the_cli_never_imports_the_language_server() -> None:
    for m in ("segue.cli", "segue.cli_search", "segue.table"):
        assert not {i for i in _everything(m) if i.startswith("segue.lsp")}, m


def test_the_surfaces_do_not_import_each_other() -> None:
    # the CLI runs `segue demo` (one way); the demo and the search command never reach back into the CLI
    assert "segue.cli" not in _everything("segue.demo")
    assert "segue.cli" not in _everything("segue.cli_search")
    for m in MODULES:
        if m.startswith("segue.lsp"):
            assert not {"segue.cli", "segue.cli_search", "segue.entry"} & _everything(m), m


@pytest.mark.parametrize("core", ["segue.errors", "segue.limits", "segue.results", "segue.service"])
def test_the_core_imports_no_surface(core: str) -> None:
    surfaces = {"segue.cli", "segue.cli_search", "segue.demo", "segue.entry", "segue.table"}
    got = _everything(core)
    assert not got & surfaces and not {i for i in got if i.startswith("segue.lsp")}, got


def test_errors_is_a_leaf() -> None:
    assert _everything("segue.errors") == set()
