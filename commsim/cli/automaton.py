"""``commsim automaton``: the minimal DFA of a language and the recurrent-model bound (Lemma 4)."""
from __future__ import annotations

import click
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.cli.files import check_target, force_option, refuse_empty, write_text
from commsim.theory.automaton import AUTOMATON_LANGUAGES, automaton_report


@cli.command("automaton")
@click.argument("language", metavar="LANGUAGE", type=click.Choice(AUTOMATON_LANGUAGES))
@click.option("--n", "n", type=int, required=True, help="String length N (even).")
@click.option("--dot", "dot_file", callback=refuse_empty, type=click.Path(dir_okay=False), default=None,
              help="Also write the minimal DFA as Graphviz DOT to this file (.dot or .gv; an existing file only if "
                   "commsim wrote it as DOT, else --force).")
@html_option
@force_option
@json_option
def automaton_command(language, n, dot_file, html_path, as_json):
    """The minimal complete DFA of LANGUAGE and the bound it puts on recurrent models (Lemma 4 of
    [BHBK24]: hidden-state bits m*p >= log2 #states).

    \b
    dyck22  Dyck-(2,2) at every length: 7 live states + reject sink, 3 state bits
    ineq    INEQ on {0,1}^N (first half != second half): minimal DFA of the exact-length language
            (Hopcroft on the trie; N <= 16) and the 2^(N/2) pairwise distinguishable prefixes of
            length N/2 that bound every DFA agreeing with INEQ on {0,1}^N (m*p >= N/2, Theorem 11)

    \b
    Examples:
      commsim automaton dyck22 --n 8
      commsim automaton ineq --n 12 --json
      commsim automaton dyck22 --n 8 --dot dyck22.dot
    """
    check_html(html_path)
    if dot_file:
        check_target(dot_file, "--dot", "dot")      # before any work
    report = automaton_report(language, n)
    if dot_file:
        write_text(dot_file, report.dfa.to_dot(f"{language} minimal DFA"), option="--dot", kind="dot")
    if html_path:
        from commsim.render.reports import automaton_page
        write_html(html_path, automaton_page(report, language, n, command_line()))
    if as_json:
        emit_json(report.to_dict())
        return
    d = report.to_dict()
    table = Table(title=f"minimal DFA for {language} (N = {n})", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_row("states", f"{d['states']} ({d['live_states']} live + "
                            f"{d['states'] - d['live_states']} dead)")
    if "formula_states" in d:
        table.add_row("formula", f"3 * 2^(N/2) + N/2 - 2 = {d['formula_states']}"
                                 f" ({'matches' if d['formula_states'] == d['states'] else 'DIFFERS'})")
    table.add_row("minimized from", f"{d['input_states']} states — {d['method']}")
    table.add_row("state bits", f"ceil(log2 {d['states']}) = {d['state_bits']}")
    if "distinguishable_prefixes" in d:
        table.add_row("distinguishable", f"{d['distinguishable_prefixes']} prefixes of length {n // 2} — "
                                         f"{d['distinguishable_method']}")
    table.add_row("lower bound", f"m*p >= {d['lower_bound_bits']} bits — {report.lower_bound.statement}")
    table.add_row("source", report.lower_bound.source)
    if dot_file:
        table.add_row("DOT", dot_file)
    console.print(table)
    if report.dfa.num_states <= 16:
        dfa = report.dfa
        trans = Table(title="transitions", show_header=True)
        trans.add_column("state")
        for sym in dfa.alphabet:
            trans.add_column(sym, justify="center")
        for q in range(dfa.num_states):
            mark = ("→" if q == dfa.start else " ") + ("*" if dfa.accepting[q] else " ")
            trans.add_row(f"{mark} {dfa.name(q)}", *[dfa.name(int(t)) for t in dfa.table[q]])
        console.print(trans)
        console.print("→ start, * accepting")
