"""A lesson's figures and its two illustrated forms: an HTML page, and Markdown with SVG files beside it.

The figures come from the lesson's own steps: each step's messages (the runner's transcript) as a sequence
diagram, and each figure entry a step declares (a certificate, a minimal DFA, a communication matrix) drawn
from that engine data, and each drawing of a reduction a step declares (:mod:`commsim.render.figures`).
"""
from __future__ import annotations

import re
from pathlib import Path

from commsim.render.figures import KINDS, drawing_svg
from commsim.render.svg import Figure, to_svg


def _step_figure(entry: dict):
    """(matplotlib figure, title, caption) of one declared figure entry, or None when it is too large."""
    kind = entry.get("kind")
    if kind == "certificate":
        from commsim.certify.view import certificate_view
        from commsim.render.exchange import certificate_figure
        cert = entry["certificate"]
        view = certificate_view(cert, entry["problem"])
        return (certificate_figure(view, cert.get("details")), f"Certificate ({view.kind})",
                entry.get("caption") or view.caption or cert.get("explanation", ""))
    if kind == "dfa":
        from commsim.render.plots import dfa_figure
        from commsim.theory.automaton import automaton_report
        report = automaton_report(entry["language"], int(entry["n"]))
        fig = dfa_figure(report.dfa, f"{entry['language']} (N = {entry['n']})")
        return None if fig is None else (fig, f"Minimal DFA of {entry['language']}",
                                         f"{report.dfa.num_states} states; m·p ≥ {report.lower_bound.bits} bits")
    if kind == "matrix":
        from commsim.render.plots import matrix_figure
        from commsim.theory.comm_matrix import analyze_matrix
        report = analyze_matrix(entry["problem"], int(entry["n"]))
        fig = matrix_figure(report)
        return None if fig is None else (fig, f"Communication matrix of {entry['problem']} (n = {entry['n']})",
                                         f"fooling set of {report.fooling.size} cells outlined; log-rank bound "
                                         f"{report.log_rank_bits} bits")
    raise ValueError(f"unknown lesson figure kind {kind!r}")


def lesson_figures(lesson) -> list[tuple[int, Figure]]:
    """(step number, figure) for every figure of the lesson, in page order: one sequence diagram per run a
    step's messages come from, then the figures the step declares."""
    from commsim.render.exchange import sequence_figure
    from commsim.teach import message_runs
    out: list[tuple[int, Figure]] = []
    for i, step in enumerate(lesson.steps, 1):
        for run, msgs in message_runs(step.messages):
            count = len(msgs)
            fig = sequence_figure(msgs, run)
            out.append((i, Figure(f"fig{len(out) + 1}-sequence",
                                  f"Step {i}: the exchange{' (' + run + ')' if run else ''} as a sequence diagram",
                                  f"{count} message{'s' if count != 1 else ''} between Alice and Bob, each with "
                                  "its label and exact bits, as the runner recorded them", to_svg(fig))))
        for entry in step.figures:
            if entry.get("kind") in KINDS:            # a drawing of the reduction, SVG written directly
                out.append((i, Figure(f"fig{len(out) + 1}-{entry['kind']}", f"Step {i}: {entry['title']}",
                                      entry.get("caption", ""), drawing_svg(entry))))
                continue
            drawn = _step_figure(entry)
            if drawn is not None:
                fig, title, caption = drawn
                out.append((i, Figure(f"fig{len(out) + 1}-{entry['kind']}", f"Step {i}: {title}", caption,
                                      to_svg(fig))))
    return out


#: a subscripted name in a lesson's prose: one letter, ``_``, then a short index or a parenthesised one
#: (``z_(n+i)``, ``a_i``, ``Z_A``); never inside a word (``paper_max_n``) or math already
_PROSE_SUB = re.compile(r"(?<![\w\\${}])([A-Za-z])_(\(([^()$\\]{1,24})\)|[A-Za-z0-9]{1,3})(?![\w($])")


def prose_math(text: str) -> str:
    """``text`` with its subscripted names as inline math (``z_(n+i)`` -> ``$z_{n+i}$``), so a page shows them
    as MathML like its formulas; text that already holds ``$`` is left as it is."""
    if "$" in text:
        return text
    return _PROSE_SUB.sub(lambda m: f"${m.group(1)}_{{{m.group(3) if m.group(3) is not None else m.group(2)}}}$",
                          text)


def _with_prose_math(lesson):
    from dataclasses import replace
    return replace(lesson, steps=[replace(s, claim=prose_math(s.claim), notes=prose_math(s.notes))
                                  for s in lesson.steps])


def lesson_page(lesson, command: str) -> str:
    """The lesson as one self-contained HTML page (the Markdown notes with inline figures and MathML)."""
    from commsim.render.instance import instance_html
    from commsim.render.page import block_token, figure_token, page
    from commsim.teach import render_markdown
    figs = lesson_figures(lesson)
    by_step: dict[int, list[str]] = {}
    for step_no, fig in figs:
        by_step.setdefault(step_no, []).append(figure_token(fig.ident))
    blocks = {f"instance{i}": instance_html(s.instance) for i, s in enumerate(lesson.steps, 1) if s.instance}
    text = render_markdown(_with_prose_math(lesson), by_step, figure_list=None, mermaid=False,
                           instances={int(k[8:]): block_token(k) for k in blocks})
    return page(lesson.title, text, [f for _, f in figs], command, blocks)


def lesson_markdown(lesson, out: str | Path | None) -> tuple[str, list[tuple[Path, str]]]:
    """The Markdown notes and the SVG files they link: ``(text, [(path, svg), ...])``.  With ``out`` the
    figures are files beside it (``STEM-figK-kind.svg``) and linked by name; without, no figures are drawn
    (the mermaid blocks stay) and the list says how to get them."""
    from commsim.teach import render_markdown
    if out is None:
        return render_markdown(lesson, figure_list=["- (figures are written as SVG files beside the notes "
                                                    "when --out FILE.md is given)"]), []
    target = Path(out)
    figs = lesson_figures(lesson)
    files, by_step, listing = [], {}, []
    for k, (step_no, fig) in enumerate(figs, 1):
        path = target.with_name(f"{target.stem}-{fig.ident}.svg")
        files.append((path, fig.svg))
        by_step.setdefault(step_no, []).append(f"![{fig.title}]({path.name})")
        listing.append(f"{k}. [{fig.title}]({path.name}) — {fig.caption}")
    return render_markdown(lesson, by_step, figure_list=listing), files


def svg_document(svg: str) -> str:
    """An inline <svg> element as a standalone .svg file."""
    head = svg if 'xmlns="http://www.w3.org/2000/svg"' in svg[:400] else svg.replace(
        "<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
    return '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + head


def exercises_html(ex_set, solutions: bool = False) -> str:
    """The exercises as an HTML section: each statement, the form of its answer, and its solution in a folded
    ``<details>`` (open when ``solutions``: the print sheet).  Text goes through Markdown, never raw."""
    import html as _html

    from commsim.render.page import markdown_to_html
    from commsim.teach.exercises import exercises_markdown
    head = exercises_markdown(ex_set, solutions=False).split("\n### ", 1)[0]
    parts = [f'<section class="exercises" id="exercises">{markdown_to_html(head)}']
    for e in ex_set.exercises:
        parts.append(markdown_to_html(f"### Exercise {e.ident[1:]}. {e.title}\n\n{e.statement}\n\n"
                                      f"*Answer as* `{e.ident}`: {e.form}"))
        opened = " open" if solutions else ""
        parts.append(f'<details class="solution"{opened}><summary>Solution to exercise {e.ident[1:]}</summary>'
                     + markdown_to_html(e.solution) + "<p><em>A right answer:</em> <code>"
                     + _html.escape(_json_text(e.example)) + "</code></p></details>")
    return "".join(parts) + "</section>"


def with_exercises(page_html: str, ex_set) -> str:
    """A lesson page with its Exercises section at the end of the main text (solutions folded)."""
    from commsim.render.sanitize import sanitize
    return sanitize(page_html.replace("</main>", exercises_html(ex_set) + "</main>", 1))


def exercises_page(ex_set, command: str, solutions: bool = False) -> str:
    """The exercises alone as one self-contained page (``solutions``: the print sheet, every solution shown)."""
    from commsim.render.page import page
    from commsim.render.sanitize import sanitize
    title = f"{'Solutions' if solutions else 'Exercises'}: {ex_set.title}"
    return sanitize(page(title, f"# {title}\n", [], command).replace("</main>", exercises_html(ex_set, solutions)
                                                                      + "</main>", 1))


def _json_text(value) -> str:
    import json
    return json.dumps(value)
