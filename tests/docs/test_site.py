"""The documentation site builds with ``mkdocs build --strict``: every page in the nav exists, no link between
pages or to an API object is broken, the command reference is generated from the click commands and the API
reference from the docstrings.  The tutorials' math is MathML written at build time and no page loads anything
from the network.  The default run builds the site without executing the tutorials (test_notebooks.py executes
them); the slow set builds it with them executed and checks their outputs are on the pages.  Skipped, saying how
to install it, without the docs extra."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted(p.stem for p in (ROOT / "docs" / "tutorials").glob("*.ipynb"))


@pytest.fixture(scope="module")
def site(fast_site):
    return fast_site


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("index.html", "RESULTS/index.html", "EXTENDING/index.html", "reference/cli/index.html",
                 "reference/api/index.html", "tutorials/your-model/index.html", "tutorials/lecture/index.html",
                 "tutorials/sweeps/index.html", "EXPERIMENTS/index.html"):
        assert (site / page).is_file(), page
    for page in (ROOT / "docs" / "guide").glob("*.md"):
        assert (site / "guide" / page.stem / "index.html").is_file(), page.name


def test_the_guide_includes_the_readme_sections_it_names(site):
    tour = (site / "guide/tour/index.html").read_text()
    safety = " ".join((site / "guide/safety/index.html").read_text().split())
    assert "A recurrent model one bit short." in tour and "How long can a model go?" in tour
    assert "--8&lt;--" not in tour and "--8&lt;--" not in safety          # every include was resolved
    assert "trusts that cluster" in safety and "127.0.0.1 without authentication" in safety


def test_the_command_reference_has_every_command(site):
    from commsim.cli import cli
    text = (site / "reference/cli/index.html").read_text()
    headings = set(re.findall(r'<h3 id="([^"]+)"', text))
    assert set(cli.commands) <= headings, set(cli.commands) - headings
    assert "--fail-on-certificate" in text                        # an option of run, from its click definition


def test_the_api_reference_documents_the_front_doors(site):
    text = (site / "reference/api/index.html").read_text()
    for name in ("run", "run_reduction", "sweep", "sample", "make_model", "prepare", "Report"):
        assert f'id="commsim.{name}"' in text, name


def _module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hook():
    return _module("docs/reference/source_links.py").on_page_markdown


class _Page:
    class file:
        src_uri = "EXTENDING.md"


@pytest.mark.parametrize("repo, expected", [
    ("", "see `tests/plugin_example/`, [RESULTS](RESULTS.md), the runner (`commsim/core/runner.py`) ![x](../a.png)"),
    ("https://example.org/r/", "see [`tests/plugin_example/`](https://example.org/r/tree/HEAD/tests/plugin_example), "
     "[RESULTS](RESULTS.md), the [runner (`commsim/core/runner.py`)](https://example.org/r/tree/HEAD/commsim/core/"
     "runner.py) ![x](../a.png)"),
])
def test_a_link_into_the_source_tree_is_shown_as_its_path(repo, expected):
    text = ("see [`tests/plugin_example/`](../tests/plugin_example), [RESULTS](RESULTS.md), "
            "the [runner](../commsim/core/runner.py) ![x](../a.png)")
    assert _hook()(text, _Page, {"repo_url": repo}, None) == expected


def test_the_tutorials_math_is_mathml_and_no_page_loads_from_the_network(site):
    for name in TUTORIALS:
        text = (site / "tutorials" / name / "index.html").read_text()
        assert "mathjax" not in text.lower() and '<script src="">' not in text, name
    lecture = (site / "tutorials/lecture/index.html").read_text()
    assert lecture.count("<math") >= 10, lecture.count("<math")
    assert "m \\cdot p" not in lecture and "$$" not in lecture          # every formula was converted
    assert '<mo>&#x02265;</mo>' in lecture                                # m·p ≥ n, as MathML
    for page in site.rglob("*.html"):
        text = page.read_text()
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, page
        assert not re.search(r'<(script|link|img)\b[^>]*(src|href)="(https?:)?//', text), page
        assert "extra/layout.css" in text and "extra/layout.js" in text, page


def test_the_site_holds_no_python_file_of_its_hooks(site):
    assert not [p for p in site.rglob("*") if p.suffix in (".py", ".pyc")]


def test_wide_tables_may_break_a_name_after_its_underscores(site):
    text = (site / "EXPERIMENTS/index.html").read_text()
    assert "<th>steps_<wbr>run</th>" in text and "wrong_<wbr>not_<wbr>forced" in text
    assert 'class="commsim-long"' in text


def test_the_math_hook_converts_markdown_cells_only():
    render = _module("docs/extra/notebook_math.py").render_math
    page = ('<!-- Load mathjax --><script src=""> </script><!-- End of mathjax configuration -->'
            '<div class="jp-Cell jp-MarkdownCell jp-Notebook-cell" id="c1"><p>bits $m \\cdot p \\ge n$ and '
            '$a &lt; b$, <code>$x$</code></p><pre>$y$</pre><p>$$\\frac{1}{2}$$ costs $5 and $6</p></div>'
            '<div class="jp-Cell jp-CodeCell jp-Notebook-cell" id="c2"><pre>print("$z$")</pre>'
            '<div class="jp-OutputArea-output"><pre>$w$ 5$</pre></div></div>'
            '<div class="jp-Cell jp-MarkdownCell jp-Notebook-cell" id="c3"><p>$\\frac{1}{$ broken</p></div>')
    out = render(page)
    assert "mathjax" not in out and '<script src="">' not in out
    first, code, broken = out.split('<div class="jp-Cell ')[1:]
    assert first.count("<math") == 3 and 'display="block"' in first and "<mo>&#x0003C;</mo>" in first
    assert "<code>$x$</code>" in first and "<pre>$y$</pre>" in first and "costs $5 and $6" in first
    assert "<math" not in code and 'print("$z$")' in code and "$w$ 5$" in code      # code and outputs as they are
    assert "<math" in broken or '<code class="latex">' in broken                   # never a raw $ left half-done


def test_the_table_hook_breaks_after_underscores_in_cell_text_only():
    breaks = _module("docs/extra/wide_tables.py").break_names
    out = breaks('<table><tr><th style="text-align: left">steps_run</th><td><a href="a_b.md">x_y</a> and a '
                 'longer text than that</td></tr></table><p>p_q</p>')
    assert out == ('<table><tr><th style="text-align: left">steps_<wbr>run</th><td class="commsim-long">'
                   '<a href="a_b.md">x_<wbr>y</a> and a longer text than that</td></tr></table><p>p_q</p>')


@pytest.mark.slow
def test_the_site_built_with_its_tutorials_executed_shows_their_outputs(executed_site):
    """The site as ``mkdocs build`` makes it by default: each tutorial executed in a kernel of this Python, its
    outputs (text, tables, figures) on the page; a cell that raises would have failed the build."""
    for name in TUTORIALS:
        text = (executed_site / "tutorials" / name / "index.html").read_text()
        outputs = len(re.findall(r'class="[^"]*\bjp-OutputArea-output\b', text))
        assert outputs >= 3, (name, outputs)
        assert not re.search(r'<div[^>]*data-mime-type="application/vnd.jupyter.stderr"', text), name
        assert "Traceback" not in text, name
    lecture = (executed_site / "tutorials/lecture/index.html").read_text()
    assert re.search(r'<img[^>]+src="data:image/png;base64,', lecture)       # the figure: bits against the bound
    assert "with a collision, all verified: True" in lecture
    assert "the first n with a forced failure is 5" in lecture
    assert "Alice&#x27;s x&#x27;" in lecture or "Alice's x'" in lecture
