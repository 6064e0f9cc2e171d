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
