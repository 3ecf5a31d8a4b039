"""No import cycles in src/, counting the imports inside functions (which
hide a cycle from a reader but not from the interpreter), and the layers
contract of pyproject.toml ([tool.importlinter]) holds.

The graph is read from the AST: ``import a.b`` and ``from a import b``
(``b`` a module or a name in ``a``), relative ones resolved, at any depth of
the code; only ``if TYPE_CHECKING:`` blocks are left out (they never run).
An edge goes to the module named, not to the packages above it (which the
interpreter initialises first, but which cannot import back mid-way).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "onnxop_cli"


def modules(src: Path = SRC) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package)."""
    found = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """Every import statement that can run (not under ``if TYPE_CHECKING:``)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def graph(src: Path = SRC) -> dict[str, set[str]]:
    """module -> the modules of this package it imports."""
    mods = modules(src)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, package) in mods.items():
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = name.split(".") if package else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            edges[name].update(t for t in targets if t in mods and t != name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
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
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_cycle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / ROOT
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    edges = graph(tmp_path)
    assert edges[f"{ROOT}.sub.b"] == {f"{ROOT}.a"}
    assert edges[f"{ROOT}.c"] == set()  # annotations only: never runs
    assert cycles(edges) == [[f"{ROOT}.a", f"{ROOT}.sub.b"]]


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles (in-function imports included):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_layers_contract_holds():
    """lint-imports (import-linter) with pyproject's contracts: the layers,
    no typer or rich below cli, wgpu, pydawn and playwright only in gpu.engines."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.fail("lint-imports is not installed (pip install -e '.[test]')")
    done = subprocess.run([sys.executable, exe, "--no-cache"], cwd=SRC.parent, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


ENGINE_PACKAGES = ("wgpu", "pydawn", "playwright")


def engine_imports(src: Path = SRC) -> dict[str, list[str]]:
    """Module (outside gpu/engines) -> the engine packages it imports, anywhere
    in its code (in-function imports included; ``if TYPE_CHECKING:`` blocks not)."""
    found = {}
    for name, (path, _) in modules(src).items():
        if name.startswith(f"{ROOT}.gpu.engines"):
            continue
        hits = []
        for node in _imports(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if not getattr(node, "level", 0):
                hits += [n for n in names if n.split(".")[0] in ENGINE_PACKAGES]
        if hits:
            found[name] = hits
    return found


def test_only_gpu_engines_imports_an_engine_package():
    """pyproject's import-linter contract names its modules one by one, so a new
    module is not in it: this looks at every module of the package."""
    assert engine_imports() == {}


def test_the_engine_import_check_finds_one_in_a_function(tmp_path):
    pkg = tmp_path / ROOT
    (pkg / "gpu" / "engines").mkdir(parents=True)
    for init in (pkg, pkg / "gpu", pkg / "gpu" / "engines"):
        (init / "__init__.py").write_text("")
    (pkg / "gpu" / "engines" / "w.py").write_text("import wgpu\n")
    (pkg / "gpu" / "k.py").write_text("def f():\n    import wgpu.backends\n    from pydawn import x\n")
    assert {k: sorted(v) for k, v in engine_imports(tmp_path).items()} == {f"{ROOT}.gpu.k": ["pydawn", "wgpu.backends"]}


def test_every_module_of_gpu_is_in_its_layers_contract():
    """The inner layers contract names each module of gpu/: a new one must be
    placed (import-linter leaves a module it does not name unchecked)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10: import-linter brings tomli
        import tomli as tomllib

    config = tomllib.loads((SRC.parent / "pyproject.toml").read_text())
    for package in ("gpu", "gpu.render"):  # render/'s own contract too (render/convert.py went unnamed in it once)
        inner = [c for c in config["tool"]["importlinter"]["contracts"] if c.get("containers") == [f"{ROOT}.{package}"]]
        assert len(inner) == 1, package
        named = {m.strip() for layer in inner[0]["layers"] for m in layer.replace("|", ":").split(":")}
        folder = SRC / ROOT / package.replace(".", "/")
        found = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
        found |= {p.parent.name for p in folder.glob("*/__init__.py")}
        assert named == found, package
