"""A runtime is defined in one place: its package under `segue.stores` and one registry line.

These checks keep it so: no module outside `segue.stores` spells a runtime id, no module loads readers by
name (`importlib` strings), the registry loads no reader, and every descriptor's commands are safe.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from segue import stores
from segue.resume import BYPASS_FLAGS, assert_no_bypass
from segue.stores import REGISTRY, RUNTIMES, UnknownRuntime, descriptor, display_name

PACKAGE = Path(stores.__file__).resolve().parent.parent
OUTSIDE_STORES = sorted(p for p in PACKAGE.rglob("*.py") if "stores" not in p.relative_to(PACKAGE).parts)


def runtime_literals(source: str, ids: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, id) of every string constant that is exactly a runtime id (docstrings and prose do not count:
    only a literal equal to the id is a place that knows the runtime)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids:
            out.append((node.lineno, node.value))
    return out


def importlib_uses(source: str) -> list[int]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "importlib" for a in node.names):
            out.append(node.lineno)
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "importlib":
            out.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            out.append(node.lineno)
    return out


def test_the_checks_see_what_they_look_for() -> None:  # negative control for the two scans below
    planted = 'x = {"codex": 1}\nimport importlib\nfrom importlib import import_module\n__import__("m")\n'
    assert runtime_literals(planted, RUNTIMES) == [(1, "codex")]
    assert importlib_uses(planted) == [2, 3, 4]
    assert runtime_literals('"""Claude Code and codex in prose."""\n', RUNTIMES) == []


def test_no_module_outside_stores_spells_a_runtime_id() -> None:
    assert len(OUTSIDE_STORES) > 20  # the scan found the package
    found = {str(p.relative_to(PACKAGE)): hits for p in OUTSIDE_STORES
             if (hits := runtime_literals(p.read_text(encoding="utf-8"), RUNTIMES))}
    assert found == {}, "runtime ids belong to segue.stores (its descriptors), not to these modules"


def test_no_module_loads_code_by_name() -> None:
    allowed = {PACKAGE / "stores" / "descriptor.py"}  # lazy_attributes: a package's own submodule
    found = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py"))
             if p not in allowed and (lines := importlib_uses(p.read_text(encoding="utf-8")))}
    assert found == {}


def test_every_runtime_package_is_registered_and_once() -> None:
    packages = sorted(p.parent.name for p in (PACKAGE / "stores").glob("*/__init__.py")
                      if "DESCRIPTOR" in p.read_text(encoding="utf-8"))
    assert sorted(RUNTIMES) == packages
    assert len(set(RUNTIMES)) == len(RUNTIMES) and len({d.name for d in REGISTRY}) == len(REGISTRY)
    for d in REGISTRY:
        assert descriptor(d.id) is d and display_name(d.id) == d.name
        assert d.id.isidentifier() and d.id.islower()
    with pytest.raises(UnknownRuntime, match="choose one of"):
        descriptor("nope")
    assert display_name("nope") == "nope"


@pytest.mark.parametrize("rt", RUNTIMES)
def test_descriptor_commands_name_the_cli_and_never_bypass_approvals(rt: str) -> None:
    d = descriptor(rt)
    sid, prompt = "0123-abcd", "Read the handoff brief at /b/x.md\n[segue-handoff v1 from=claude:abc]"
    native, new = d.native_argv(sid), d.new_session_argv(prompt)
    assert native[0] == new[0] == d.cli
    assert sid in native and prompt in new and new.count(prompt) == 1  # the prompt is one argument
    for argv in (native, new):
        assert_no_bypass(argv)
        assert not BYPASS_FLAGS & set(argv)
    assert d.install and d.install_hint.startswith(f"install {d.name}: ")
    assert d.icon and d.env_overrides


def test_the_registry_loads_no_reader() -> None:
    code = ("import sys, segue.stores, segue.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith('segue.stores.') and m.count('.') > 2))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
    # and a reader loads on first use through its package
    code = "import segue.stores as s; print(s.claude.ClaudeReader.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ClaudeReader"


@pytest.mark.parametrize("rt", RUNTIMES)
def test_a_reader_loads_first_by_any_route(rt: str) -> None:
    """Through its descriptor, or its reader module imported before anything else (a reader module that
    imports a sibling through its package must not start loading the package's public names midway)."""
    module = descriptor(rt).reader.__module__
    for code in (f"import segue.stores as s; from pathlib import Path; from segue.stores.base import Env; "
                 f"print(type(s.descriptor({rt!r}).reader(Env(home=Path('/nonexistent')))).__name__)",
                 f"import {module}.reader" if module.endswith(rt) and (PACKAGE / "stores" / rt / "reader.py").exists()
                 else f"import {module}"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
