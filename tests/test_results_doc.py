"""docs/RESULTS.md and docs/EXPERIMENTS.md stay true: every module:function they name exists, and every test
RESULTS.md cites exists."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "RESULTS.md"
DOCS = [DOC, ROOT / "docs" / "EXPERIMENTS.md"]


def _defined(path: Path) -> set[str]:
    """Top-level names and Class.member names (methods, class attributes, ``self.x`` set in a method) of a module."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names |= {f"{node.name}.{member}" for member in _members(node)}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _members(cls: ast.ClassDef) -> set[str]:
    members = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            members.add(node.name)
            members |= {t.attr for sub in ast.walk(node) if isinstance(sub, (ast.Assign, ast.AnnAssign))
                        for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target])
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
        elif isinstance(node, ast.Assign):
            members |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            members.add(node.target.id)
    return members


#: a source file named in backticks, with the names it is cited for: `path.py:Name` (also written `path.py: Name`,
#: broken over a line), `path.py`: `Name`, or `path.py:Class` (`member`, ...) / `path.py` (`Name`, ...)
SOURCE_REF = re.compile(r"`((?:[\w.-]+/)*[\w-]+\.py)(?::\s*([\w.]+))?`"
                        r"(?::\s*`([\w.]+)`|\s*\((`[\w.]+`(?:,\s*`[\w.]+`)*)\))?")


def _source_refs(doc: Path):
    """(reference as written, file it names or None, names it is cited for) of every source reference in ``doc``.
    A path is from the repository root, from tests/ (as the test column writes them), or a file beside the last
    full path named before it (a sibling, or a file named in full earlier: `bounds.py` after
    `protocols/experiments/bounds.py`)."""
    seen: dict[str, Path] = {}
    last: Path | None = None
    for m in SOURCE_REF.finditer(doc.read_text()):
        path, name, after, listed = m.groups()
        candidates = [ROOT / path, ROOT / "tests" / path]
        if last is not None:
            candidates.append(last.parent / path)
        candidates.append(seen.get(Path(path).name))
        found = next((c for c in candidates if c is not None and c.exists()), None)
        if found is not None and "/" in path:
            last = seen[found.name] = found
        main = name or after
        members = re.findall(r"`([\w.]+)`", listed or "")
        names = [main] if main else []
        names += [f"{main}.{member}" if main else member for member in members]
        yield m.group(0), found, names


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_named_source_file_and_name_exists(doc):
    """Every `path.py:Name` the page names -- in its tables and its prose -- is a file that defines that name."""
    refs = list(_source_refs(doc))
    missing = [ref for ref, found, names in refs
               if found is None or (names and not set(names) <= _defined(found))]
    assert len(refs) > 10 and not missing, f"{doc.name} names what does not exist: {missing}"


def _cells():
    for line in DOC.read_text().splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            yield [c.strip() for c in line.strip("|").split("|")]


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
