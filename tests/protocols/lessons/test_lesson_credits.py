"""Who is credited with what in the lessons, read from the generated text in every format (plain text, Markdown,
HTML): a paper is credited only with what it states, commsim's own steps are marked, and the numbers printed are
the ones computed (the theorem's own form beside commsim's)."""
from __future__ import annotations

import html
import re

import pytest
from built_lessons import lesson as built_lesson

_CACHE: dict = {}


def _subscript(m: re.Match) -> str:
    """A MathML subscript read as the prose writes it: ``z_i``, ``z_(n+i)``."""
    sub = html.unescape(re.sub(r"<[^>]+>", "", m.group(2)))
    return f"{m.group(1)}_{sub if len(sub) == 1 else '(' + sub + ')'}"


def _plain_html(page: str) -> str:
    """The page's text: tags dropped (a page's subscripted name in prose, MathML there, read as the prose writes
    it), entities read, whitespace collapsed."""
    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page, flags=re.S)
    text = re.sub(r'<math[^>]*display="inline"><mrow><msub><mi>(\w)</mi>(.*?)</msub></mrow></math>', _subscript, text)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def formats(topic: str, n: int | None = None) -> dict:
    """The lesson and its three renderings ({"lesson", "text", "markdown", "html"}), built once per topic."""
    key = (topic, n)
    if key not in _CACHE:
        from commsim.render.lesson import lesson_markdown, lesson_page
        from commsim.teach import render_plain
        lesson = built_lesson(topic, n)
        out = {"lesson": lesson, "text": " ".join(render_plain(lesson).split()),
               "markdown": " ".join(lesson_markdown(lesson, None)[0].split())}
        try:
            import jinja2  # noqa: F401  (the page renderer's dependency)
            out["html"] = _plain_html(lesson_page(lesson, f"commsim teach {topic}"))
        except ImportError:   # pragma: no cover - part of the test install
            out["html"] = None
        _CACHE[key] = out
    return _CACHE[key]


def in_every_format(topic: str, *phrases: str, absent: tuple[str, ...] = (), n: int | None = None) -> None:
    got = formats(topic, n)
    for fmt in ("text", "markdown", "html"):
        text = got[fmt]
        if text is None:
            continue
        for phrase in phrases:
            assert " ".join(phrase.split()) in text, (topic, fmt, phrase)
        for phrase in absent:
            assert phrase not in text, (topic, fmt, phrase)


def step(topic: str, title_part: str, n: int | None = None):
    return next(s for s in formats(topic, n)["lesson"].steps if title_part in s.title)


def test_compose_labels_its_corollaries_and_shows_the_theorems_own_r():
    """[PNP24] Theorem 1 states R = n log n - H(d + 1)p; the deterministic count and the C-bit substitution are
    commsim's corollaries, and the theorem's own R is shown beside the corollary's."""
    from protocols.theorems import composition_error_bound, composition_message_bits
    lesson = formats("compose", 8)["lesson"]
    message = step("compose", "Alice's message", 8)
    sent = sum(len(bits) for _, _, bits in message.messages)
    count = composition_message_bits(1, 2, 4)
    R_paper, paper = composition_error_bound(8, count)
    R_own, own = composition_error_bound(8, sent)
    assert (count, round(paper, 4), round(own, 4)) == (12, 0.1667, 0.125) and lesson.n == 8
    in_every_format("compose", f"H(d + 1)p = {count}, so R = {R_paper:.3f} and the bound is {paper:.4f}",
                    f"commsim's own corollary puts in the C = {sent} bits", f"R = {R_own:.3f}, bound {own:.4f}",
                    "This deterministic count is commsim's corollary, not a statement of [PNP24]",
                    absent=("[PNP24], Theorem 1 (deterministic form)",), n=8)
    counting = step("compose", "Counting", 8)
    assert counting.reference.startswith("commsim's own corollary")
    theorem = step("compose", "How often", 8)
    assert f"{paper:.4f}" in theorem.inequality and f"{own:.4f}" in theorem.inequality


def test_attention_disj_marks_commsims_match3_the_disj_convention_and_the_one_way_refinement():
    in_every_format("attention-disj",
                    "[SHT23] let j and k range over all of [N]; commsim's Match3 takes them distinct and both ≠ i",
                    "as [SHT23] do: x_(2n+1) = enc(0)",
                    "[SHT23]'s Match3 reduction reads DISJ(a, b) = 0 when the sets meet (1 = disjoint); commsim uses [BHBK24]'s "
                    "convention",
                    "is commsim's own refinement", absent=("a pair j, k (distinct, both ≠ i)",))
    one_way = step("attention-disj", "One-way")
    assert "commsim's own" in one_way.reference and one_way.reference != "[SHT23] (qSA lower bound)"


def test_rnn_disj_counts_n_keys_plus_n_queries():
    in_every_format("rnn-disj", "N = 2n because of n keys plus n queries",
                    "MQAR over n labelled keys followed by n queries (N = 2n inputs)",
                    absent=("counts a labelled key (v_i, y_i) as one input", "N = 2n labelled keys"))


def test_graph_transformers_index_is_the_layouts():
    got = formats("graph-transformers")
    assert "a_((x-1)n+y) = b_((x-1)n+y) = 1" in got["text"] and "a_(xn+y)" not in got["text"]
    assert "a_{(x-1)n+y}" in got["markdown"] and "a_{xn+y}" not in got["markdown"]
    in_every_format("graph-transformers", "Alice's bit a_((x−1)·n+y) is the edge u_x → v_y")


def test_rnn_index_names_the_symbols_and_the_tokens_apart():
    in_every_format("rnn-index", "m·p ≥ n caps the number n of symbols a recurrent model can index into",
                    "max N from the budget library: 8193 tokens, i.e. n = 8192 symbols and the index token",
                    "max N = 8193 tokens, n = 8192 symbols",
                    absent=("N ≤ m p = 128", "INDEX_N"))
    text = formats("rnn-index")["text"]
    assert "n ≤ m p = 128 · 64 = 8192 (N = n + 1 ≤ 8193 tokens)" in text


def test_randomized_names_the_prime_q_and_does_not_say_the_sampler_meets_the_bound():
    got = formats("randomized")
    six = step("randomized", "INDEX one-way keeps")
    sent, bound = (int(x) for x in re.search(r"sends (\d+) bits where the bound at that error asks for (\d+)",
                                             six.claim).groups())
    assert sent > bound and "meets it" not in six.claim
    in_every_format("randomized", f"it sends {sent} bits where the bound at that error asks for {bound}, so it "
                    "stays above the bound", "over the field F_q, q = ", absent=("The sampling protocol meets it",
                                                                                 "over the field F_p"))
    assert "(n - 1)/q" in got["text"] and "2⌈log2 q⌉" in got["text"]


def test_two_layers_quotes_theorem_4s_count():
    in_every_format("two-layers", "A one-layer model's protocol costs 3m(p + log N)H bits (Theorem 4)",
                    absent=("A one-layer model's protocol costs O(m·p·H·log N) bits.",))


def test_attention_dyck_writes_the_ceiling_where_it_computes_it_and_the_papers_own_form_beside():
    from protocols.theorems import theorem5_paper_lengths
    got = formats("attention-dyck", 12)
    assert "m H ≥ (N - 1)/(3 (p + ⌈log2 N⌉)) = 11/(3(" in got["text"]
    assert "(p + log N)) = 11/" not in got["text"]
    own_max, own_out = theorem5_paper_lengths(64, 16, 8)
    assert (own_max, own_out) == (48484, 48486)
    in_every_format("attention-dyck", "commsim computes it with ⌈log2 N⌉ = 4 in place of log N",
                    f"in the paper's form 3m(p + log2 N)H >= N − 1 holds up to N = {own_max} (first ruled out "
                    f"{own_out}); commsim's whole-bit form 3m(p + ceil(log2 N))H >= N − 1 up to N = 49152", n=12)


@pytest.mark.parametrize("m, p, H, first_out", [(64, 16, 2, 11316), (4, 13, 1, 254)])
def test_theorem5_in_the_papers_form_by_hand(m, p, H, first_out):
    """The paper's log N is real: the first even N with 3m(p + log2 N)H < N - 1, checked by a direct scan."""
    import math

    from protocols.theorems import theorem5_paper_lengths
    scan = next(N for N in range(2, 10 ** 6, 2) if 3 * m * (p + math.log2(N)) * H < N - 1)
    assert theorem5_paper_lengths(m, p, H) == (scan - 2, scan) and scan == first_out
