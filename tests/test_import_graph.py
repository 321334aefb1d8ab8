"""The import graph of nwbound, read from the source with ``ast`` (nothing is imported).

Rules (issue 11):

* ``cli → experiments → library`` is a one-way street: no module outside
  ``nwbound.cli`` imports ``nwbound.cli``.
* No import cycle between nwbound's subpackages (a top-level module such as
  ``nwbound.assumptions`` counts as its own unit; the root ``nwbound``
  package, a facade, is left out).
* No import cycle between nwbound's modules either (issue 19), except the
  pairs listed in :data:`ALLOWED_MODULE_CYCLES`; imports under
  ``if TYPE_CHECKING:`` are left out (they never run). And every module
  imports in a fresh interpreter.
* Nor with the imports under ``if TYPE_CHECKING:`` counted (issue 31: a static
  analyser follows them), except :data:`ALLOWED_TYPE_CHECKING_CYCLES`.
* No module imports a private name (``_x``) defined in another subpackage,
  except the pairs listed in :data:`ALLOWED_PRIVATE`, each with its reason.
* No module is longer than :data:`MAX_MODULE_LINES` lines (issue 19): a longer
  one is split along its seams into a package of private modules.

Function-level (lazy) imports count: they are dependencies all the same.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "nwbound"
MAX_MODULE_LINES = 1000

# (importing unit, "module:name") → why it is tolerated for now. Remove entries as the
# issue-11 refactor lands; the test fails on an entry that no longer occurs, so the list
# never goes stale.
ALLOWED_PRIVATE: dict[tuple[str, str], str] = {
}


# Module-level import circles still tolerated (issue 19), each with its reason. The test
# fails on an entry that no longer occurs, so the list never goes stale.
ALLOWED_MODULE_CYCLES: dict[tuple[str, ...], str] = {}

# Circles that only imports under ``if TYPE_CHECKING:`` close, still tolerated (issue 31), each
# with its reason; the test fails on an entry that no longer occurs.
ALLOWED_TYPE_CHECKING_CYCLES: dict[tuple[str, ...], str] = {
    ("nwbound.experiments._ecg_adaptive_report", "nwbound.experiments.ecg_adaptive"):
        "the report's type hint names the experiment's result type; experiments/ was outside issue 31's seam",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve(module: str, is_pkg: bool, level: int, target: str | None) -> str:
    """Absolute name of ``from <level dots><target> import …`` inside ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


MODULES = _modules()


def _is_type_checking(node: ast.AST) -> bool:
    """Whether ``node`` is ``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _imports(runtime_only: bool = False) -> list[tuple[str, str, str | None, int]]:
    """``(importer, imported module, imported name or None, line)`` for every nwbound import
    (with ``runtime_only``, those that run: not under ``if TYPE_CHECKING:``)."""
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _runtime_nodes(tree) if runtime_only else ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == ROOT:
                        found.append((name, alias.name, None, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(name, _is_package(path), node.level, node.module)
                if target.split(".")[0] != ROOT:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:  # `from pkg import module`
                        found.append((name, sub, None, node.lineno))
                    else:
                        found.append((name, target, alias.name, node.lineno))
    return found


IMPORTS = _imports()
RUNTIME_IMPORTS = _imports(runtime_only=True)


def _unit(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to: ``nwbound.x``."""
    return ".".join(module.split(".")[:2])


def test_parser_sees_the_package():
    # Guards against a test that passes because it read nothing.
    assert len(MODULES) > 40 and "nwbound.cli.main" in MODULES and "nwbound.utils" in MODULES
    assert any(imp[0] == "nwbound.cli.fit" and imp[1] == "nwbound.utils" for imp in IMPORTS)
    assert _resolve("nwbound.cli.fit", False, 2, "utils") == "nwbound.utils"
    assert _resolve("nwbound.utils", True, 1, "_args") == "nwbound.utils._args"


def test_nothing_outside_the_cli_imports_the_cli():
    bad = [
        f"{src} line {line}: imports {mod}"
        for src, mod, _, line in IMPORTS
        if mod.startswith("nwbound.cli") and not src.startswith("nwbound.cli")
    ]
    assert not bad, "cli → experiments → library is one-way:\n" + "\n".join(bad)


def test_utils_import_nothing_but_validation():
    bad = [
        f"{src} line {line}: imports {mod}"
        for src, mod, _, line in IMPORTS
        if src.startswith("nwbound.utils") and not mod.startswith(("nwbound.utils", "nwbound._validation"))
    ]
    assert not bad, "nwbound.utils must stay at the bottom of the graph:\n" + "\n".join(bad)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative enough for ~20 nodes)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_subpackages():
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for src, mod, _, line in IMPORTS:
        a, b = _unit(src), _unit(mod)
        if a == b or ROOT in (a, b):
            continue
        edges.setdefault(a, set()).add(b)
        where.setdefault((a, b), f"{src} line {line}")
    cycles = _cycles(edges)
    detail = [
        " ↔ ".join(c) + ": " + "; ".join(f"{where[(a, b)]} → {b}" for a in c for b in c if (a, b) in where)
        for c in cycles
    ]
    assert not cycles, "import cycles between subpackages:\n" + "\n".join(detail)


def _module_cycles(imports: list | None = None) -> dict[tuple[str, ...], str]:
    """Import circles between nwbound modules (runtime imports, lazy ones included; ``imports``:
    another list, such as every import with those under ``if TYPE_CHECKING:``), each with the
    import lines that make it."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for src, mod, _, line in RUNTIME_IMPORTS if imports is None else imports:
        if src == mod or mod not in MODULES:
            continue
        edges.setdefault(src, set()).add(mod)
        where.setdefault((src, mod), f"{src} line {line}")
    return {
        tuple(c): "; ".join(f"{where[(a, b)]} → {b}" for a in c for b in c if (a, b) in where)
        for c in _cycles(edges)
    }


def test_type_checking_imports_are_left_out():
    # The root package imports its public names only for static analysers.
    assert any(src == ROOT and mod == "nwbound.estimators" for src, mod, _, _ in IMPORTS)
    assert not any(src == ROOT and mod == "nwbound.estimators" for src, mod, _, _ in RUNTIME_IMPORTS)
    tree = ast.parse("if TYPE_CHECKING:\n    import a\nelse:\n    import b\nimport c\n")
    runtime = sorted(n.names[0].name for n in _runtime_nodes(tree) if isinstance(n, ast.Import))
    assert runtime == ["b", "c"]


def test_no_import_cycle_between_modules():
    found = _module_cycles()
    bad = [" ↔ ".join(c) + ": " + how for c, how in found.items() if c not in ALLOWED_MODULE_CYCLES]
    assert not bad, "import cycles between modules (move the shared pieces to a module both import):\n" + "\n".join(bad)


def test_no_import_cycle_between_modules_even_under_type_checking():
    found = _module_cycles(IMPORTS)
    bad = [" ↔ ".join(c) + ": " + how for c, how in found.items()
           if c not in ALLOWED_MODULE_CYCLES and c not in ALLOWED_TYPE_CHECKING_CYCLES]
    assert not bad, ("import cycles between modules, counting those under TYPE_CHECKING (annotate with a "
                     "protocol or a base class that both import):\n" + "\n".join(bad))


@pytest.mark.parametrize("cycle", sorted(ALLOWED_TYPE_CHECKING_CYCLES))
def test_allowed_type_checking_cycles_still_occur(cycle):
    assert cycle in _module_cycles(IMPORTS), f"{cycle} no longer occurs; remove it from ALLOWED_TYPE_CHECKING_CYCLES"


@pytest.mark.parametrize("cycle", sorted(ALLOWED_MODULE_CYCLES))
def test_allowed_module_cycles_still_occur(cycle):
    # A circle that no longer occurs must leave the list (it was broken).
    assert cycle in _module_cycles(), f"{cycle} no longer occurs; remove it from ALLOWED_MODULE_CYCLES"


def test_every_module_imports_in_a_fresh_interpreter():
    # With no circle, the order does not matter; this catches a module that fails to import
    # at all (a name moved without its re-export, a missing dependency at import time).
    code = (
        "import importlib, pkgutil, sys, nwbound\n"
        "names = sorted(m.name for m in pkgutil.walk_packages(nwbound.__path__, 'nwbound.'))\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print('\\n'.join(names))\n"
    )
    path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    imported = set(proc.stdout.split())
    assert imported == set(MODULES) - {ROOT}, sorted(imported ^ (set(MODULES) - {ROOT}))


def _private_imports() -> dict[tuple[str, str], str]:
    found = {}
    for src, mod, name, line in IMPORTS:
        if name is None or not name.startswith("_") or name.startswith("__"):
            continue
        if _unit(src) == _unit(mod):
            continue
        found[(_unit(src), f"{mod}:{name}")] = f"{src} line {line}"
    return found


def test_no_private_names_across_subpackages():
    found = _private_imports()
    bad = [f"{where}: imports {key[1]}" for key, where in found.items() if key not in ALLOWED_PRIVATE]
    assert not bad, "private names used across subpackages (make them public or move them):\n" + "\n".join(bad)


@pytest.mark.parametrize("key", sorted(ALLOWED_PRIVATE))
def test_allowed_exceptions_still_occur(key):
    # An exception that no longer occurs must leave the list (the refactor landed).
    assert key in _private_imports(), f"{key} no longer occurs; remove it from ALLOWED_PRIVATE"


def test_no_module_is_over_the_line_limit():
    # Issue 19: files over 1 000 lines are split along their seams (a package of private
    # modules re-exporting the public names, as nwbound.assumptions and nwbound.lipschitz_check).
    lengths = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}
    assert lengths["nwbound.utils"] > 0  # guards against a test that passes because it read nothing
    long = sorted(f"{MODULES[name].relative_to(SRC)}: {n} lines" for name, n in lengths.items() if n > MAX_MODULE_LINES)
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them along their seams):\n" + "\n".join(long)
