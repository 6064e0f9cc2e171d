"""--html on the report commands and teach --format html|markdown: one self-contained page with the figures
the command's data gives; Markdown notes with mermaid and the SVG files they link; bad targets exit 2."""
from __future__ import annotations

import re

import pytest
from cli_helpers import invoke, run_main

pytest.importorskip("matplotlib")
pytest.importorskip("latex2mathml")

PAGES = [
    (["run", "dyck22-fooling", "--n", "8"], ["fig-sequence", "fig-certificate"]),
    (["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", "index-idxl", "--n-range", "4:64"],
     ["fig-budget"]),
    (["fooling", "eq", "--n", "3"], ["fig-matrix"]),
    (["matrix", "disj", "--n", "3"], ["fig-matrix"]),
    (["tree", "index", "--n", "2", "--protocol", "two-way"], ["fig-tree"]),
    (["automaton", "dyck22", "--n", "4"], ["fig-dfa"]),
]


def figure_ids(text: str) -> list[str]:
    return re.findall(r'<figure class="figure" id="([^"]+)"', text)


@pytest.mark.parametrize("args,expected", PAGES, ids=[a[0] for a, _ in PAGES])
def test_each_report_command_writes_its_page(tmp_path, args, expected):
    target = tmp_path / "page.html"
    invoke(args + ["--html", str(target)])
    text = target.read_text(encoding="utf-8")
    assert figure_ids(text) == expected
    assert "<math" in text and "$$" not in text
    for ident in expected:                                  # the page's figure list links every figure
        assert f'href="#{ident}"' in text


def test_run_html_with_json_still_prints_one_object(tmp_path):
    target = tmp_path / "r.html"
    out = invoke("run", "index-idxl", "--n", "4", "--json", "--html", str(target))
    assert out["reduction"] == "index-idxl" and target.exists()


@pytest.mark.parametrize("name", ["r.txt", "r.svg"])
def test_html_must_name_an_html_file(capsys, tmp_path, name):
    code, out, err = run_main(capsys, "run", "index-idxl", "--n", "4", "--html", str(tmp_path / name))
    assert code == 2 and err.startswith("Error: --html must name a .html file") and list(tmp_path.iterdir()) == []


def test_teach_html_to_stdout_and_to_a_file(tmp_path):
    text = invoke("teach", "attention-protocol", "--n", "3", "--format", "html")
    assert text.startswith("<!DOCTYPE html>") and "fig1-sequence" in text and "$$" not in text
    target = tmp_path / "a.html"
    invoke("teach", "attention-protocol", "--n", "3", "--format", "html", "--out", str(target))
    assert figure_ids(target.read_text(encoding="utf-8")) == figure_ids(text)


def test_teach_markdown_links_svg_files_that_exist_and_has_mermaid(tmp_path):
    target = tmp_path / "dyck.md"
    invoke("teach", "attention-dyck", "--n", "4", "--format", "markdown", "--out", str(target))
    text = target.read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links and "```mermaid" in text and "sequenceDiagram" in text
    assert any("certificate" in link for link in links)
    for link in links:
        svg = (tmp_path / link).read_text(encoding="utf-8")
        assert svg.startswith("<?xml") and svg.rstrip().endswith("</svg>") and "<text" in svg
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({target.name, *links})


def test_teach_markdown_to_stdout_has_mermaid_but_no_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = invoke("teach", "rnn-index", "--n", "3", "--format", "markdown")
    assert "```mermaid" in text and ".svg)" not in text and list(tmp_path.iterdir()) == []


def test_teach_help_lists_each_topics_n_range():
    text = " ".join(invoke("teach", "--help").split())      # click wraps the help at the terminal width
    assert "Topics (and the --n each accepts)" in text
    assert "--n = N, the string length: even, 4..16 (default 8)" in text                 # attention-dyck
    assert "--n = n, the length of Alice's string (INDEX_n; the model reads N = n + 1 tokens): 3..12 (default 6)" in text    # rnn-index


def test_piped_teach_output_has_no_boxes_and_keeps_rows_whole():
    text = invoke("teach", "attention-protocol", "--n", "3")
    assert "╭" not in text and "│" not in text
    messages = [line for line in text.splitlines() if line.startswith("  message:")]
    assert messages and all(re.search(r"\(\d+ bits?\) [01]+…?$", line) for line in messages)


def test_separate_html_has_both_sides_the_plot_and_the_table(capsys, tmp_path):
    target = tmp_path / "sep.html"
    out = invoke("separate", "idxl", "--n", "16", "--instances", "50", "--json", "--html", str(target))
    text = target.read_text(encoding="utf-8")
    assert figure_ids(text) == ["fig-separation"] and 'href="#fig-separation"' in text
    assert "<svg" in text and "<h2>Construction: one-layer attention" in text and out["html_file"] == str(target)
    cells = re.findall(r'<td style="text-align:right">([^<]*)</td>', text)
    for row in out["rows"]:                                  # every row of the table is on the page
        assert str(row["N"]) in cells and str(row["width_bits"]) in cells
    code, _, err = run_main(capsys, "separate", "idxl", "--n", "16", "--html", str(tmp_path / "s.txt"))
    assert code == 2 and err.startswith("Error: --html must name a .html file") and not (tmp_path / "s.txt").exists()
