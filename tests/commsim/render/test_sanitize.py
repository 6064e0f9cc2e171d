"""No script in a page: injection strings through every field that reaches a page, on every page kind.

User text is carried through Markdown and math as tokens (never read as Markdown, never given to
latex2mathml) and every finished page goes through the allow-list sanitizer; the parsed page must have no
script element, no on* attribute, no javascript: URL and no external reference (href/src other than a
#fragment or a data: image)."""
from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_helpers import run_main
from hypothesis import given, settings
from hypothesis import strategies as st
from injection import Injected, inject

pytest.importorskip("latex2mathml")
pytest.importorskip("markdown_it")

from commsim.render.page import page  # noqa: E402
from commsim.render.sanitize import safe_css, safe_url, sanitize  # noqa: E402

INJECTIONS = [r"$\text{<script>alert(1)</script>}$", "<svg/onload=alert(1)>", r"$\href{javascript:alert(1)}{x}$",
              '<img src="http://evil/x">', '<mrow href="javascript:x">', "<script>alert(2)</script>",
              "[x](javascript:alert(3))", "![x](http://evil/y.png)", "<a href='http://evil/'>z</a>",
              "$$\\text{<b onclick=alert(4)>}$$"]
ALL = " ".join(INJECTIONS)


class _Audit(HTMLParser):
    """Every element and attribute of a page, for the checks below."""

    def __init__(self):
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._check(tag, attrs)

    def handle_startendtag(self, tag, attrs):
        self._check(tag, attrs)

    def _check(self, tag, attrs):
        if tag in ("script", "iframe", "object", "embed", "foreignobject"):
            self.problems.append(f"element {tag}")
        for name, value in attrs:
            value = (value or "").strip()
            if name.startswith("on"):
                self.problems.append(f"{tag} {name}")
            if "javascript:" in value.lower().replace(" ", ""):
                self.problems.append(f"{tag} {name}={value!r}")
            if name in ("href", "src", "xlink:href", "action", "formaction", "background", "poster") and not (
                    value.startswith("#") or value.startswith("data:image/")):
                self.problems.append(f"{tag} {name}={value!r}: an external reference")
            if name == "style" and "url(" in value and "url(#" not in value:
                self.problems.append(f"{tag} style url")


def assert_safe(text: str) -> None:
    audit = _Audit()
    audit.feed(text)
    assert not audit.problems, audit.problems[:5]
    assert "<script" not in text.lower()


def _inject(value):
    """Every string inside ``value`` with the injection strings appended."""
    return inject(value, ALL)


def _Injected(report, keep=()):   # noqa: N802 - reads as the class it builds
    return Injected(report, ALL, keep)


# ---- the sanitizer itself ------------------------------------------------------------------------
def test_the_sanitizer_keeps_a_page_and_drops_what_is_not_allowed():
    dirty = ('<p onclick="x()">a<script>alert(1)</script>b<iframe src="http://e"></iframe>'
             '<a href="javascript:alert(1)">c</a><a href="#fig1">d</a><img src="http://evil/x">'
             '<img src="data:image/png;base64,AAAA"><svg viewBox="0 0 1 1" onload="x()"><use xlink:href="#m1"/>'
             '<use xlink:href="http://evil/#m"/><rect style="fill: url(http://evil/)"/><metadata><x>t</x>'
             '</metadata></svg><math><mrow href="javascript:x"><mtext>e</mtext></mrow></math>'
             '<style>@import url(http://evil/x.css);</style><!-- c --></p>')
    clean = sanitize(dirty)
    assert_safe(clean)
    for kept in ("a", "b", "c", 'href="#fig1"', "data:image/png;base64,AAAA", 'viewBox="0 0 1 1"',
                 'xlink:href="#m1"', "<mtext>e</mtext>"):
        assert kept in clean, kept
    for gone in ("alert", "iframe", "onload", "onclick", "metadata", "@import", "<!--", "http://evil"):
        assert gone not in clean, gone
    assert sanitize(clean) == clean                                     # idempotent


def test_urls_and_css():
    assert safe_url("#fig-1") and not safe_url("java\nscript:alert(1)") and not safe_url("http://x/")
    assert safe_url("data:image/png;base64,AAAA", image=True) and not safe_url("data:image/png;base64,AAAA")
    assert not safe_url("data:text/html;base64,AAAA", image=True)
    assert safe_css("fill: url(#p1); stroke: #000") and not safe_css("background: url(http://x/)")
    assert not safe_css("width: expression(alert(1))") and not safe_css("@import 'x.css'")


def test_page_never_gives_user_text_to_latex2mathml_and_sanitizes_its_own_markdown():
    from commsim.render.page import code_token, text_token
    text = page(f"title {ALL}", f"# {text_token(ALL)}\n\n{code_token(ALL)}\n\n" + "\n\n".join(INJECTIONS), [],
                f"commsim run {ALL}")
    assert_safe(text)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text      # the user's text is shown, escaped, verbatim


# ---- every page kind -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def elman_weights(tmp_path_factory) -> Path:
    from protocols.models.trainable import random_model
    path = tmp_path_factory.mktemp("w") / "good.npz"
    random_model("elman", 4, "8", vocab=6, classes=2).save(str(path))     # index-idxl at n = 4: 6 tokens
    return path


@pytest.mark.parametrize("crafted", [r"$\text{<script>alert(1)</script>}$", "<svg onload=alert(1)>",
                                     r"$\href{javascript:alert(1)}{x}$", '<img src="http:evil">',
                                     '<mrow href="javascript:x">'])
def test_run_page_with_a_crafted_weights_file_name(capsys, tmp_path, elman_weights, crafted):
    target = tmp_path / "x" / f"{crafted}.npz"          # a "/" in the string makes folders: fine
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(elman_weights, target)
    out = tmp_path / "r.html"
    code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"elman:weights={target}", "--n", "4",
                            "--html", str(out))
    assert code == 0, err
    text = out.read_text()
    assert_safe(text)
    assert crafted.replace("<", "&lt;").replace(">", "&gt;") in text.replace("&quot;", '"')   # shown as text


def test_run_page_with_a_model_object_spec_from_the_python_api():
    from commsim.runs.run import run_reduction
    from commsim.render.reports import run_page
    from protocols.models.trainable import random_model
    model = random_model("elman", 4, "8", vocab=8, classes=2)       # index-idxl at n = 6: 8 tokens
    model.spec = ALL                                                # the name a report gives the model
    report = run_reduction("index-idxl", model, n=6)
    assert report.model == ALL
    text = run_page(report, ALL)
    assert_safe(text)
    injected = run_page(_Injected(report, keep=("certificate", "evaluation_sets", "bits_by_direction",
                                                 "lower_bound", "torch_agreement", "measured_error")), ALL)
    assert_safe(injected)


def test_every_other_page_kind():
    from commsim.budget.compute import budget
    from commsim.plugins import load_plugins
    from commsim.render.reports import (
        automaton_page,
        budget_page,
        fooling_page,
        matrix_page,
        separation_page,
        tree_page,
    )
    from commsim.theory.automaton import automaton_report
    from commsim.theory.comm_matrix import analyze_matrix
    from commsim.theory.fooling import fooling_set
    from commsim.theory.protocol_tree import build_protocol_tree
    numbers = ("n", "protocol_bits", "lower_bound_bits", "max_n", "bits_formula", "paper_max_n", "rows", "cols",
               "ones", "rank_real", "rank_gf2", "log_rank_bits", "gf2_rank_bits", "distinct_rows", "one_way_bits",
               "fooling_search", "two_way_lower_bound_bits", "states", "live_states", "input_states",
               "state_bits", "depth", "output_leaves", "pairs_run", "nodes", "rounds")
    report = budget("attention", 4, 8, "dyck22-fooling", heads=1, n=16)
    pages = [budget_page(_Injected(report, keep=numbers), ALL)]
    pages.append(matrix_page(_Injected(analyze_matrix("eq", 2), keep=numbers), ALL))
    pages.append(automaton_page(_Injected(automaton_report("dyck22", 4), keep=numbers), ALL, 4, ALL))
    fs = fooling_set("eq", 2)
    data = fs.to_dict(None)
    pages.append(fooling_page(fs, {k: v if k in ("n", "lower_bound_bits", "verified") else _inject(v)
                                   for k, v in data.items()} | {"problem": "eq"}, ALL))
    tree = build_protocol_tree("eq", 2, load_plugins().get("cc-protocol", "one-way"))
    pages.append(tree_page(_Injected(tree, keep=numbers), ALL))
    data = load_plugins().get("separation", "idxl").run(8, seed=0, instances=64).to_dict()
    pages.append(separation_page({k: v if k in ("columns", "plot") else _inject(v) for k, v in data.items()}, ALL))
    for text in pages:
        assert_safe(text)
        assert "&lt;script&gt;" in text             # the injected text is on the page, as text


def test_teach_page(capsys, tmp_path):
    from commsim.plugins import load_plugins
    from commsim.render.lesson import lesson_page
    from commsim.teach import Step
    lesson = load_plugins().get("topic", "attention-dyck")(None)
    lesson.title = ALL
    lesson.steps.append(Step(title=ALL, claim=ALL, instance=ALL, holdings={"alice": ALL, "bob": ALL},
                             messages=[("alice", ALL, "0101")], inequality=r"\text{<script>alert(5)</script>}",
                             reference=ALL, notes=ALL))
    assert_safe(lesson_page(lesson, ALL))
    out = tmp_path / "t.html"
    code, _, err = run_main(capsys, "teach", "attention-dyck", "--format", "html", "--out", str(out))
    assert code == 0, err
    assert_safe(out.read_text())


def test_the_sanitizer_keeps_commsims_own_pages_whole(monkeypatch):
    """Every element and attribute of a real page survives with its value (a style's declarations written back
    as ``name: value; ...``), except matplotlib's SVG metadata block (which names external URLs) and the
    ``<style>`` in each SVG (its one rule is in the page's stylesheet)."""
    import collections
    import re

    import commsim.render.page as page_module
    from commsim.runs.run import run_reduction
    from commsim.render.reports import run_page
    monkeypatch.setattr(page_module, "sanitize", lambda text: text)
    raw = run_page(run_reduction("eq-ineq", "lstm:width=1,precision=2", n=4), "commsim run eq-ineq")

    def census(text):
        tags, attrs = collections.Counter(), collections.Counter()

        def value(name, v):
            if name != "style":
                return v
            return "; ".join(re.sub(r"\s*:\s*", ": ", d.strip(), count=1) for d in v.split(";") if d.strip())

        class Census(HTMLParser):
            def handle_starttag(self, tag, at):
                tags[tag] += 1
                attrs.update((tag, k, value(k, v)) for k, v in at)
            handle_startendtag = handle_starttag
        Census().feed(text)
        return tags, attrs
    clean = sanitize(raw)
    (tags, attrs), (kept_tags, kept_attrs) = census(raw), census(clean)
    metadata = {"metadata", "rdf:rdf", "cc:work", "dc:type", "dc:date", "dc:format", "dc:creator", "cc:agent",
                "dc:title"}
    assert tags["metadata"] and not kept_tags["metadata"]
    assert tags["style"] > 1 and kept_tags["style"] == 1 and "svg * { stroke-linejoin: round" in clean
    assert {t for t in tags - kept_tags} <= metadata | {"style"}
    lost = {a for a in attrs - kept_attrs if a[0] not in metadata | {"style"}}
    assert {a for a in lost if not a[1].startswith("xmlns:")} == set()     # the metadata's namespaces go too
    assert sanitize(clean) == clean


FRAGMENTS = ["<", ">", "/", "script", "svg", "onload=", "on", "=", '"', "'", "javascript:", "href", "src", "a ",
             "img ", "x", "(", ")", "alert(1)", "<!--", "-->", "style", "url(", "http://e/", "&#x3c;", "&lt;", " ",
             "math", "mtext", "\\text{", "}", "$", "iframe", "\n", "\t", "java\tscript:", "<![CDATA[", "]]>"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_the_sanitizer_lets_nothing_through(parts):
    assert_safe(sanitize("".join(parts)))
