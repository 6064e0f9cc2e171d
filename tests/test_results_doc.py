"""docs/RESULTS.md and docs/EXPERIMENTS.md stay true: every module:function they name exists, and every test
RESULTS.md cites exists."""
from __future__ import annotations

import ast
from fractions import Fraction
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


def _tables():
    """Each table of RESULTS.md as (its header cells, its rows' cells)."""
    header, rows = None, []
    for line in DOC.read_text().splitlines() + [""]:
        if line.startswith("|---"):
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            else:
                rows.append(cells)
        elif header is not None:
            yield header, rows
            header, rows = None, []


def _rows():
    """Every row of every table as {column name: cell}."""
    for header, rows in _tables():
        for cells in rows:
            yield dict(zip(header, cells))


def test_every_cited_test_exists():
    missing, cited = [], 0
    for row in _rows():
        last = None
        for ref in re.findall(r"`([^`]+)`", row.get("checked by", "")):
            file, _, name = ref.rpartition("::")
            last = file or last
            path = ROOT / "tests" / last
            cited += 1
            if not path.exists() or not re.search(rf"^def {re.escape(name)}\(", path.read_text(), re.M):
                missing.append(ref)
    assert cited > 40 and not missing, f"docs/RESULTS.md cites tests that do not exist: {missing}"


# ---- every row credited to its true source -------------------------------------------------------------------------
PAPER = re.compile(r"\[(BHBK24|SHT23|PNP24)\]")
NUMBERED = re.compile(r"\b(Theorem|Lemma|Fact|Proposition|Corollary|Definition)s?\s+(\d+(?:\.\d+)?(?:(?:\s*,\s*|\s+and\s+)"
                      r"\d+(?:\.\d+)?)*)")
PLACE = re.compile(r"\b(App\.|Sec\.|Fig\.)\s*([A-Z](?:\.\d)?|\d+(?:\.\d)?[a-c]?)")
OWN = "commsim's own"
#: a work outside the seeds, cited by its authors and year (the randomized bounds' classics)
LITERATURE = re.compile(r"[A-Z][a-z]+(?:[-–, ]+[A-Z][a-z]+)*,? (?:19|20)\d\d")


def cited_results(text: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """The papers' results a text cites, (paper, kind, number or name), and what it cites that is not a listed
    result of the paper it names.  Text before the first [PAPER] is read with [BHBK24]'s numbers (the page's
    convention); a [SHT23] citation must start with one of the names ``PAPER_RESULTS`` lists for it."""
    from protocols.theorems import PAPER_RESULTS
    marks = list(PAPER.finditer(text))
    segments = [("BHBK24", text[:marks[0].start()] if marks else text)]
    segments += [(m.group(1), text[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(text)])
                 for i, m in enumerate(marks)]
    found, unknown = [], []
    for paper, segment in segments:
        listed = PAPER_RESULTS[paper]
        if paper == "SHT23":
            name = next((n for n in sorted(listed["named"], key=len, reverse=True) if segment.strip().startswith(n)),
                        None)
            (found.append((paper, "named", name)) if name else unknown.append(f"[SHT23]{segment[:40]}"))
            continue
        for kind, numbers in NUMBERED.findall(segment):
            for number in re.findall(r"\d+(?:\.\d+)?", numbers):
                hit = number in listed.get(kind, set())
                (found if hit else unknown).append((paper, kind, number) if hit else f"[{paper}] {kind} {number}")
        for kind, place in PLACE.findall(segment):
            hit = place in listed.get(kind, set())
            (found if hit else unknown).append((paper, kind, place) if hit else f"[{paper}] {kind} {place}")
    return found, unknown


def source_problem(row: dict) -> str | None:
    """Why a row's source cell does not credit the result (None: it does)."""
    source = row.get("source", "")
    if not source:
        return "no source"
    found, unknown = cited_results(source)
    if unknown:
        return f"cites what its paper does not have: {unknown}"
    if OWN in source:
        tests = re.findall(r"`([^`]+::[^`]+)`", row.get("checked by", ""))
        if "checked by" in row and not tests:
            return "commsim's own, but no test checks it"
        return None
    if not found and not LITERATURE.search(source):
        return "names no paper result, no outside work, and does not say commsim's own"
    return None


def test_every_row_names_its_source():
    """Every row of every table has a source cell: a paper and a result it lists, an outside work, or commsim's
    own with the test that checks it."""
    rows = list(_rows())
    bad = [(row.get("result"), source_problem(row)) for row in rows if source_problem(row)]
    assert len(rows) > 100 and not bad, f"rows without a true source: {bad}"


def test_every_paper_result_the_page_names_is_one_the_paper_has():
    """Anywhere on the page, ``[BHBK24] Theorem 9`` or ``Lemma 7 of [BHBK24]`` is caught."""
    from protocols.theorems import PAPER_RESULTS
    text = DOC.read_text()
    cited = [(m.group(1), m.group(2), m.group(3)) for m in
             re.finditer(r"\[(BHBK24|PNP24)\] (Theorem|Lemma|Fact|Proposition|Corollary|Definition) (\d+(?:\.\d+)?)", text)]
    cited += [(m.group(3), m.group(1), m.group(2)) for m in
              re.finditer(r"(Theorem|Lemma|Fact|Proposition|Corollary|Definition) (\d+(?:\.\d+)?) of \[(BHBK24|PNP24)\]", text)]
    wrong = [c for c in cited if c[2] not in PAPER_RESULTS[c[0]].get(c[1], set())]
    assert len(cited) > 30 and not wrong, wrong


@pytest.mark.parametrize("source, problem", [
    ("", "no source"),
    ("[BHBK24] Theorem 9", "does not have"),          # [BHBK24] has Proposition 9, no Theorem 9
    ("[PNP24] Theorem 3", "does not have"),
    ("[SHT23] Theorem 7", "does not have"),           # [SHT23] is cited by name only
    ("[BHBK24] App. J", "does not have"),
    ("somewhere in the literature", "names no paper result"),
    ("commsim's own", "no test checks it"),
])
def test_the_source_check_catches_a_missing_or_wrong_source(source, problem):
    assert problem in source_problem({"result": "r", "source": source, "checked by": "none"})


def test_the_source_check_accepts_true_sources():
    for source in ("[BHBK24] Theorem 8; MQAR is its proof's case (App. G.1)", "[SHT23] qSA lower bound (RNN)",
                   "Ablayev 1996; Kremer, Nisan, Ron 1999", "[PNP24] Theorems 1 and 2",
                   "[BHBK24] Sec. 6, Fig. 2a, Fig. 2c, Fig. 3, App. H.1"):
        assert source_problem({"source": source, "checked by": "`a.py::test_b`"}) is None, source
    assert source_problem({"source": "commsim's own", "checked by": "`a.py::test_b`"}) is None


def test_user_documentation_speaks_of_the_project_only():
    """README and docs never cite issue numbers, sessions, engineers or the clock times of runs (the git history
    keeps that record); test identifiers in backticks are code, not prose."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    said = re.compile(r"\bissues? #?\d+|\bissue's\b|\bthis issue\b|\bengineers?\b|\bsessions?\b|\d\d:\d\d(?::\d\d)? UTC",
                      re.I)
    found = [(page.name, m.group(0)) for page in pages for m in said.finditer(re.sub(r"`[^`]*`", "", page.read_text()))]
    assert len(pages) > 10 and not found, found


def _row(result: str) -> dict:
    return next(row for row in _rows() if row.get("result") == result)


def test_the_corrected_credits_read_as_the_papers_state_them():
    """Division once is commsim's default (App. D rounds each weight); Bob -> Alice INDEX is commsim's count (Fact 3
    is Alice -> Bob); Theorem 7 is credited with its own p = O(log N) and nothing smaller; the C-bit and
    deterministic forms of [PNP24] Theorem 1 are commsim's corollaries; Sec. 2 lets g depend on t, Lemma 4 keeps its
    caveat; Theorem 8 is nearest neighbour, MQAR its proof's case; the 3-cycle bound passes 8 at n = 33."""
    assert _row("division once, the default")["source"].startswith("commsim's own")
    assert _row("per-weight division")["source"] == "[BHBK24] App. D"
    assert _row("INDEX one-way from the index holder")["source"].startswith("commsim's own (not [BHBK24] Fact 3")
    theorem7 = _row("nearest neighbour, two layers")["what it says"]
    assert "log log" not in theorem7 and "p = O(log N)" in theorem7
    assert _row("one-way INDEX over an alphabet of n")["source"].startswith("commsim's own corollary of [PNP24]")
    assert "commsim's own corollary" in _row("the error a short message forces")["source"]
    assert "g_t(x_t, h_{t-1})" in _row("RNN model")["what it says"]
    assert "caveat" in _row("RNN vs DFA states")["source"] and "g_t depends on t is open" in \
        _row("RNN vs DFA states")["what it says"]
    theorem8 = _row("nearest neighbour, RNN (run as MQAR)")
    assert "nearest neighbour" in theorem8["what it says"] and "App. G.1" in theorem8["source"]
    n = next(n for n in range(1, 100) if Fraction(n * n - 2, 4 * n) > 8)
    assert n == 33 and f"from n = {n} (N = {3 * n}) on" in _row("`separate 3cycle`")["what it says"]
