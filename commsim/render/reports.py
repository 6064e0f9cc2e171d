"""The commands' reports as HTML pages: ``run`` (summary, sequence diagram, certificate), ``budget`` (bits
vs bound over N), ``separate`` (both sides over N), ``fooling``, ``matrix`` (heatmap), ``tree`` (protocol tree) and ``automaton`` (DFA).

Each page is Markdown built from the report's own dict (the same numbers the terminal prints), with the
figures drawn from the report's objects, rendered by :func:`commsim.render.page.page`.
"""
from __future__ import annotations

from commsim.render.page import code_token, figure_token, page, text_token
from commsim.render.svg import Figure, to_svg


def _md(text) -> str:
    """Text in a Markdown table cell or paragraph, shown verbatim: never read as Markdown, math or HTML."""
    return text_token(" ".join(str(text).split("\n")))


def _table(rows: list[tuple[str, object]]) -> list[str]:
    return ["| item | value |", "|---|---|"] + [f"| **{_md(k)}** | {_md(v)} |" for k, v in rows] + [""]


def _place(figures: list[Figure], fig, ident: str, title: str, caption: str) -> list[str]:
    """Add a drawn figure (None: too large to draw) and return the Markdown lines placing it."""
    if fig is None:
        return [f"*{_md(title)}: too large to draw here.*", ""]
    figures.append(Figure(ident, title, caption, to_svg(fig)))
    return [figure_token(ident), ""]


def _relation(used: int, bound: int) -> str:
    return r"\ge" if used >= bound else "<"


def summary_table(rows) -> list[str]:
    """The run summary's rows (:func:`commsim.render.summary.run_summary`) as a Markdown table: the label in
    bold, the row's lead (what the terminal colours) in bold too."""
    def cell(row) -> str:
        return f"**{_md(row.lead)}**{_md(row.rest) if row.rest else ''}" if row.lead else _md(row.text)
    return ["| item | value |", "|---|---|"] + [f"| **{_md(r.label)}** | {cell(r)} |" for r in rows] + [""]


def run_page(report, command: str) -> str:
    """``commsim run --html``: the summary (the same rows as the terminal), the bits against the bound, the
    costliest transcript as a sequence diagram, and the certificate."""
    from commsim.certify.view import certificate_view
    from commsim.render.exchange import certificate_figure, sequence_figure
    from commsim.render.summary import run_summary
    d = report.to_dict()
    figures: list[Figure] = []
    title = f"commsim run {d['reduction']}"
    md = [f"# {_md(title)}", "", f"{_md(d['problem'])} → {_md(d['task'])}, n = {d['n']}, sequence length "
          f"{d['seq_len']}; model {code_token(d['model'])}.", ""]
    md += ["## Summary", ""]
    md += summary_table(run_summary(report))
    unit, measured = d["lower_bound"].get("unit", "bits"), d["lower_bound"].get("measured")
    used = d["bits_used"] if unit == "bits" else measured      # a bound on the model's size: its own value
    if d["bound_applies"] and d["lower_bound_bits"] is not None and used is not None:
        name = "bits used" if unit == "bits" else unit
        md += ["$$", rf"\text{{{name}}} = {int(used)} \;{_relation(used, d['lower_bound_bits'])}"
               rf"\; {int(d['lower_bound_bits'])} = \text{{lower bound}}", "$$", ""]
    md += ["## The exchange", ""]
    if report.transcript is not None:
        t = report.transcript
        md += [f"The costliest transcript ({t.total_bits} bits, {t.rounds} round(s)) as the runner recorded it.", ""]
        md += _place(figures, sequence_figure(t.messages, f"{d['protocol']}: {t.total_bits} bits"), "fig-sequence",
                     "The protocol as a sequence diagram",
                     "Alice and Bob lanes, one arrow per message with its label and exact bits, rounds marked")
    else:
        md += ["No transcript was recorded for this run.", ""]
    md += ["## Certificate", ""]
    if d["certificate"]:
        view = certificate_view(d["certificate"], d["problem"])
        md += [_md(view.explanation), ""]
        if view.task_output:
            md += [_md(view.task_output), ""]
        md += _place(figures, certificate_figure(view, d["certificate"].get("details")), "fig-certificate",
                     f"Certificate ({view.kind})", view.caption or view.explanation)
        if view.model_input:
            md += [f"Model input: {code_token(view.model_input)}", ""]
    else:
        md += [_md(d["certificate_search"] or "no certificate: the certificate search was not run"), ""]
    return page(title, "\n".join(md), figures, command)


def budget_page(report, command: str) -> str:
    """``commsim budget --html``: the verdict, the table over N and the bits-vs-bound curve."""
    from commsim.budget.compute import paper_count_text, paper_max_n_text
    from commsim.render.plots import budget_figure
    d = report.to_dict()
    figures: list[Figure] = []
    title = f"commsim budget: {d['task']}, {d['arch']}"
    md = [f"# {_md(title)}", ""]
    md += _table([("N", f"{d['n']} tokens; run --n {d['run_n']} ({d['n_meaning']})"),
                  ("protocol bits", f"{d['protocol_bits']}: {d['protocol_text']}"),
                  ("the paper's count", paper_count_text(d)),
                  ("lower bound", f"{d['lower_bound_bits']} bits — {d['bound_note']}"),
                  ("max N", d["max_n"] if d["max_n"] is not None else "not ruled out in the range searched"),
                  ("paper's max N", paper_max_n_text(d)),
                  ("verdict", d["verdict"])])
    if d["protocol_bits"] is not None and d["lower_bound_bits"] is not None:
        md += ["$$", rf"\text{{protocol bits}} = {d['protocol_bits']} \;{_relation(d['protocol_bits'], d['lower_bound_bits'])}"
               rf"\; {d['lower_bound_bits']} = \text{{lower bound at }} N = {d['n']}", "$$", ""]
    if report.table:
        md += ["## Bits against the bound over N", ""]
        md += _place(figures, budget_figure(report), "fig-budget", "Bits vs bound over N",
                     "protocol bits and the lower bound against N (log-log), the largest N not ruled out dashed")
        md += ["| N | protocol bits | lower bound | ok |", "|---:|---:|---:|:---:|"]
        md += [f"| {r['n']} | {r['bits']} | {'—' if r['lower_bound_bits'] is None else r['lower_bound_bits']} | "
               f"{'—' if r['ok'] is None else ('yes' if r['ok'] else 'no')} |" for r in report.table] + [""]
    return page(title, "\n".join(md), figures, command)


def separation_page(data: dict, command: str) -> str:
    """``commsim separate --html``: the claim, both sides, the verdict, the table over N and the plot."""
    from commsim.render.plots import separation_figure
    figures: list[Figure] = []
    title = f"commsim separate {data['task']}: {data['title']}"
    md = [f"# {_md(title)}", "", _md(data["claim"]), ""]
    for side, name in (("upper", "construction"), ("lower", "the other side")):
        info = data[side]
        md += [f"## {name.capitalize()}: {_md(info.get('arch', ''))}", ""]
        md += _table([(k, v) for k, v in info.items() if k != "arch"])
    md += _table([("verdict", data["verdict"]), ("every row verified", "yes" if data["all_verified"] else "no")])
    md += ["## Both sides over N", ""]
    md += _place(figures, separation_figure(data), "fig-separation", "Both sides over N",
                 "the construction's size and the other side's bound against N (log-log); the crossing is marked "
                 "where there is one in the range")
    columns = data["columns"]
    md += ["| " + " | ".join(_md(c["label"]) for c in columns) + " |", "|" + "---:|" * len(columns)]
    md += ["| " + " | ".join(_md(row.get(c["key"], "—")) for c in columns) + " |" for row in data["rows"]] + [""]
    if data["notes"]:
        md += ["## Notes", ""] + [f"- {_md(note)}" for note in data["notes"]] + [""]
    return page(title, "\n".join(md), figures, command)


def matrix_page(report, command: str) -> str:
    """``commsim matrix --html``: the bounds read off the matrix and its heatmap with the fooling set."""
    from commsim.render.plots import matrix_figure
    d = report.to_dict()
    figures: list[Figure] = []
    title = f"commsim matrix {d['problem']} (n = {d['n']})"
    fs = d["fooling_search"]
    md = [f"# {_md(title)}", ""]
    md += _table([("shape", f"{d['rows']} x {d['cols']}, {d['ones']} ones"),
                  ("rank (reals / GF(2))", f"{d['rank_real']} / {d['rank_gf2']}"),
                  ("log-rank bound", f"{d['log_rank_bits']} bits (reals), {d['gf2_rank_bits']} bits (GF(2))"),
                  ("distinct rows", f"{d['distinct_rows']} → one-way bound {d['one_way_bits']} bits"),
                  ("fooling set found", f"{fs['size']} cells of value {fs['value']} → {fs['bits']} bits "
                                        f"({'verified' if fs['verified'] else 'NOT verified'})"),
                  ("two-way lower bound", f"{d['two_way_lower_bound_bits']} bits")])
    md += ["$$", rf"\mathrm{{CC}}(f) \ge \max(\lceil\log_2 \mathrm{{rank}}\rceil, \lceil\log_2 |S|\rceil) = "
           rf"{d['two_way_lower_bound_bits']}", "$$", ""]
    md += _place(figures, matrix_figure(report), "fig-matrix", "Communication matrix",
                 f"M[x, y] = f(x, y); the {fs['size']} fooling-set cells outlined")
    return page(title, "\n".join(md), figures, command)


def tree_page(tree, command: str) -> str:
    """``commsim tree --html``: the tree's checks and the tree drawn, answer leaves coloured by output."""
    from commsim.render.plots import tree_figure
    d = tree.to_dict()
    figures: list[Figure] = []
    title = f"commsim tree: {d['protocol']} for {d['problem']} (n = {d['n']})"
    md = [f"# {_md(title)}", ""]
    md += _table([("input pairs run", d["pairs_run"]), ("nodes", d["nodes"]),
                  ("depth (worst-case bits)", d["depth"]), ("rounds", d["rounds"]),
                  ("leaves are rectangles", d["all_rectangles"]), ("answer leaves monochromatic", d["all_monochromatic"]),
                  ("correct on every input", d["correct"])])
    md += ["$$", rf"\text{{depth}} = {d['depth']} \text{{ bits}},\quad \text{{leaves}} = {d['output_leaves']}", "$$", ""]
    md += _place(figures, tree_figure(tree), "fig-tree", "Protocol tree",
                 "internal nodes coloured by who speaks, edges labelled with the bits sent, leaves by output")
    return page(title, "\n".join(md), figures, command)


def automaton_page(report, language: str, n: int, command: str) -> str:
    """``commsim automaton --html``: the DFA's size, the bound, and the DFA drawn."""
    from commsim.render.plots import dfa_figure
    d = report.to_dict()
    figures: list[Figure] = []
    title = f"commsim automaton {language} (N = {n})"
    md = [f"# {_md(title)}", ""]
    md += _table([("states", f"{d['states']} ({d['live_states']} live)"),
                  ("minimized from", f"{d['input_states']} states — {d['method']}"),
                  ("lower bound", f"m·p ≥ {d['lower_bound_bits']} bits — {report.lower_bound.statement}")])
    md += ["$$", rf"m p \ge \lceil \log_2 {d['states']} \rceil = {d['state_bits']}", "$$", ""]
    md += _place(figures, dfa_figure(report.dfa, f"{language} minimal DFA"), "fig-dfa", "Minimal DFA",
                 "states and transitions; accepting states double-ringed, the dead sink grey")
    return page(title, "\n".join(md), figures, command)


def fooling_page(fs, data: dict, command: str) -> str:
    """``commsim fooling --html``: the set, its bound and, when small, its members on the communication matrix."""
    from commsim.render.plots import MATRIX_MAX_SIDE, matrix_figure
    figures: list[Figure] = []
    title = f"commsim fooling {data['problem']} (n = {data['n']})"
    md = [f"# {_md(title)}", ""]
    md += _table([("construction", fs.construction), ("size", data["size"]),
                  ("lower bound", f"{data['lower_bound_bits']} bits — {fs.lower_bound.statement}"),
                  ("verified", "not asked (use --verify)" if data["verified"] is None else data["verified"])])
    md += ["$$", rf"\mathrm{{CC}} \ge \lceil \log_2 |S| \rceil = {data['lower_bound_bits']}", "$$", ""]
    if data["problem"] != "dyck22" and 2 ** int(data["n"]) <= MATRIX_MAX_SIDE:
        from commsim.theory.comm_matrix import analyze_matrix
        md += _place(figures, matrix_figure(analyze_matrix(data["problem"], int(data["n"]))), "fig-matrix",
                     "Communication matrix", "a fooling set the matrix search found, outlined")
    return page(title, "\n".join(md), figures, command)
