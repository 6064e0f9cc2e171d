"""docs/RESULTS.md stays true: every module:function it names exists, and every test it cites exists."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "RESULTS.md"


def _defined(path: Path) -> set[str]:
    """Top-level names and Class.method names defined in a module."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names |= {f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef)}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _cells():
    for line in DOC.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            yield [c.strip() for c in line.strip("|").split("|")]


def test_every_named_function_exists():
    missing = []
    for cells in _cells():
        for cell in cells[2:3]:
            last = None
            for ref in re.findall(r"`([^`]+)`", cell):
                m = re.fullmatch(r"((?:commsim|protocols)/[\w/]+\.py)(?::([\w.]+))?", ref)
                if m:
                    last = m.group(1)
                    if not (ROOT / last).exists():
                        missing.append(ref)
                    elif m.group(2) and m.group(2) not in _defined(ROOT / last):
                        missing.append(ref)
                    continue
                m = re.fullmatch(r"([\w]+\.py):([\w.]+)", ref)   # a sibling of the last path
                if m and last:
                    sibling = (ROOT / last).parent / m.group(1)
                    if not sibling.exists() or m.group(2) not in _defined(sibling):
                        missing.append(ref)
    assert not missing, f"docs/RESULTS.md names what does not exist: {missing}"


def test_every_cited_test_exists():
    missing, cited = [], 0
    for cells in _cells():
        if len(cells) < 4:
            continue
        last = None
        for ref in re.findall(r"`([^`]+)`", cells[3]):
            file, _, name = ref.rpartition("::")
            last = file or last
            path = ROOT / "tests" / last
            cited += 1
            if not path.exists() or not re.search(rf"^def {re.escape(name)}\(", path.read_text(), re.M):
                missing.append(ref)
    assert cited > 40 and not missing, f"docs/RESULTS.md cites tests that do not exist: {missing}"
