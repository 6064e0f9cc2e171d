"""The README is what a newcomer needs -- what commsim is, the two set-up commands, a short tour, the trust
boundaries, links -- and the manual lives on the documentation site (``docs/guide/``).  These checks need no
docs extra: the README stays short, keeps its two commands in their form (``.ci/run`` reads the test command
from it), links to every page of the guide, and the README sections the guide includes by ``pymdownx.snippets``
exist and hold no link that would break once included."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUIDE = sorted((ROOT / "docs" / "guide").glob("*.md"))
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def _command_after(marker: str) -> str:
    assert README.count(f"<!-- {marker} -->") == 1, marker
    block = re.search(rf"<!-- {marker} -->\n```\n(.*?)```", README, re.S)
    assert block, f"no code block right after <!-- {marker} -->"
    lines = block.group(1).strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_the_readme_stays_short():
    assert len(README.splitlines()) < 250


def test_the_two_set_up_commands_keep_their_form():
    venv = r"python3 -m venv \.venv && \. \.venv/bin/activate && "
    assert re.fullmatch(venv + r"pip install -e \. && commsim run index-idxl", _command_after("main-command"))
    assert re.fullmatch(venv + r'pip install -e "\.\[[a-z,]+\]" && pytest -q -n 2 --hypothesis-profile=ci',
                        _command_after("test-command"))


@pytest.mark.skipif(shutil.which("awk") is None, reason="awk is not installed")
def test_ci_runs_the_readme_test_command():
    program = re.search(r"awk '([^']+)' README\.md", (ROOT / ".ci/run").read_text()).group(1)
    done = subprocess.run(["awk", program, "README.md"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == _command_after("test-command")


def test_every_readme_link_resolves_and_every_guide_page_is_linked():
    targets = {t for t in LINK.findall(README) if "://" not in t}
    assert all((ROOT / t).exists() for t in targets), sorted(t for t in targets if not (ROOT / t).exists())
    assert len(GUIDE) >= 5
    assert {f"docs/guide/{page.name}" for page in GUIDE} <= targets
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert all(f" guide/{page.name}\n" in nav for page in GUIDE)
    assert 'pip install -e ".[docs]" && mkdocs serve' in README


def test_the_readme_sections_the_guide_includes_exist_without_links():
    included = {name for page in GUIDE for name in re.findall(r'^--8<-- "README\.md:([\w-]+)"$',
                                                               page.read_text(encoding="utf-8"), re.M)}
    assert {"tour-run", "tour-budget", "safety"} <= included
    for name in included:
        section = re.search(rf"<!-- --8<-- \[start:{name}\] -->\n(.*?)<!-- --8<-- \[end:{name}\] -->", README, re.S)
        assert section, name
        assert not LINK.search(section.group(1)), f"a relative link in README section {name} breaks in docs/guide"
