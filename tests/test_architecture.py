"""The layering of DESIGN section 2 holds: import-linter contracts, no import cycle, small files."""
from __future__ import annotations

from pathlib import Path

import grimp
import networkx as nx
from importlinter.application.use_cases import SUCCESS, lint_imports
from importlinter.configuration import configure

ROOT = Path(__file__).resolve().parents[1]

#: files longer than MAX_LINES that each hold a single concept (the reason is the concept)
LONG_SINGLE_CONCEPT = {}
MAX_LINES = 450


def test_import_linter_contracts_are_kept(monkeypatch):
    """Every contract in pyproject.toml ([tool.importlinter]) is kept."""
    monkeypatch.chdir(ROOT)
    configure()
    kept = lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True)
    assert kept == SUCCESS, "an import contract is broken: the report above names the imports at fault"


def test_no_module_level_import_cycle():
    """No circle of imports between any two modules of commsim or protocols (lazy imports included)."""
    graph = grimp.build_graph("commsim", "protocols", cache_dir=None)
    g = nx.DiGraph()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            g.add_edge(module, imported)
    # a package's __init__ importing its own submodules (to register them) is not a cycle of concepts
    cycles = [c for c in nx.simple_cycles(g)
              if not any(a.startswith(b + ".") or b.startswith(a + ".") for a in c for b in c if a != b)]
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_no_long_file_mixing_concepts():
    """A module longer than MAX_LINES must be listed as holding one concept (and say which)."""
    long = {str(p.relative_to(ROOT)): sum(1 for _ in p.open()) for d in ("commsim", "protocols")
            for p in (ROOT / d).rglob("*.py")}
    offenders = {p: n for p, n in long.items() if n > MAX_LINES and p not in LONG_SINGLE_CONCEPT}
    assert not offenders, f"split these files by concept (or list them with their one concept): {offenders}"
    stale = [p for p in LONG_SINGLE_CONCEPT if long.get(p, 0) <= MAX_LINES]
    assert not stale, f"no longer long; remove from LONG_SINGLE_CONCEPT: {stale}"


#: the engine modules a plugin may import: the top-level API, the contract, the theory and the number formats
PLUGIN_DOORS = ("commsim", "commsim.contract", "commsim.theory", "commsim.core.precision")


def engine_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``commsim`` module the file imports, at any depth (inside functions too)."""
    import ast
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "commsim"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "commsim":
            found.append((node.lineno, node.module))
            if node.module == "commsim":       # ``from commsim import runs`` names a module, not the API
                found += [(node.lineno, f"commsim.{a.name}") for a in node.names
                          if (ROOT / "commsim" / a.name).exists() or (ROOT / "commsim" / f"{a.name}.py").exists()]
    return found


def outside_doors(module: str) -> bool:
    return not any(module == door or (door != "commsim" and module.startswith(door + ".")) for door in PLUGIN_DOORS)


def test_plugins_import_only_the_engines_doors():
    """An allow-list, closed by default: a plugin (``protocols`` and the third-party example) imports ``commsim``,
    ``commsim.contract``, ``commsim.theory`` or ``commsim.core.precision`` -- any other engine module, including
    one added tomorrow, fails here (the import-linter contract lists today's packages only)."""
    files = sorted((ROOT / "protocols").rglob("*.py")) + sorted((ROOT / "tests" / "plugin_example").rglob("*.py"))
    assert len(files) > 100
    bad = [f"{f.relative_to(ROOT)}:{line}: {module}" for f in files for line, module in engine_imports(f)
           if outside_doors(module)]
    assert not bad, "plugins import engine internals:\n" + "\n".join(bad)


def test_the_plugin_doors_check_refuses_an_internal(tmp_path):
    """The walk above sees a module-level import, a function-level one and ``from commsim import <module>``."""
    code = ("from commsim.contract import Encoded\nimport commsim.runs.stages\n"
            "def f():\n    from commsim.core.errors import InputError\n    from commsim import runs, make_model\n")
    (tmp_path / "plugin.py").write_text(code)
    modules = [m for _, m in engine_imports(tmp_path / "plugin.py")]
    assert [m for m in modules if outside_doors(m)] == ["commsim.runs.stages", "commsim.core.errors", "commsim.runs"]
    assert not outside_doors("commsim.contract.values") and not outside_doors("commsim.theory.bounds")
