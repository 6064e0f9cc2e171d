"""``commsim matrix``: the communication matrix of a small problem and the bounds read off it."""
from __future__ import annotations

import click
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.limits import check_seed
from commsim.theory.comm_matrix import analyze_matrix
from commsim.theory.problems import PROBLEM_NAMES

#: the figure is drawn when the matrix is at most this many rows and columns
FIGURE_MAX_SIDE = 64


@cli.command("matrix")
@click.argument("problem", metavar="PROBLEM", type=click.Choice(PROBLEM_NAMES))
@click.option("--n", "n", type=int, required=True, help="Problem size (n bits; string length N for dyck22).")
@click.option("--restarts", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Greedy passes of the fooling-set search.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fooling-set search.")
@click.option("--figure/--no-figure", default=True, show_default=True,
              help=f"Draw the matrix (when at most {FIGURE_MAX_SIDE} x {FIGURE_MAX_SIDE}).")
@html_option
@json_option
def matrix_command(problem, n, restarts, seed, figure, html_path, as_json):
    """The communication matrix M[x, y] = f(x, y) of PROBLEM (rows: Alice, columns: Bob) and its
    bounds: log-rank over the reals and GF(2), the one-way bound ceil(log2 #distinct rows), and a
    fooling set found by a bounded, seeded search (verified pairwise).

    \b
    Examples:
      commsim matrix eq --n 4
      commsim matrix dyck22 --n 6 --json
      commsim matrix disj --n 8 --restarts 8 --seed 1 --no-figure
    """
    check_seed(seed, "--seed")
    check_html(html_path)
    report = analyze_matrix(problem, n, restarts=restarts, seed=seed)
    d = report.to_dict()
    if html_path:
        from commsim.render.reports import matrix_page
        write_html(html_path, matrix_page(report, command_line()))
    if as_json:
        emit_json(d)
        return
    M = report.matrix
    rows, cols = M.shape
    if figure and rows <= FIGURE_MAX_SIDE and cols <= FIGURE_MAX_SIDE:
        console.print(f"[bold]M[x, y] = {problem}(x, y)[/]  (█ = 1, · = 0; rows: Alice, columns: Bob)")
        width = max(len(M.input_text("alice", i)) for i in range(rows))
        for i, line in enumerate(M.render()):
            console.print(f"{M.input_text('alice', i):>{width}} {line}", markup=False)
    table = Table(title=f"communication matrix of {problem} (n = {n})", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_row("shape", f"{rows} x {cols}, {d['ones']} ones")
    rank_text = f"{d['rank_real']} (numpy SVD)"
    if d["rank_mod_p"] is not None:
        rank_text += f"; mod 2^31-1: {d['rank_mod_p']}"
    table.add_row("rank over the reals", rank_text)
    table.add_row("rank over GF(2)", str(d["rank_gf2"]))
    table.add_row("log-rank bound", f"{d['log_rank_bits']} bits (reals), {d['gf2_rank_bits']} bits (GF(2))")
    table.add_row("distinct rows", f"{d['distinct_rows']} → one-way bound {d['one_way_bits']} bits")
    fs = d["fooling_search"]
    known = d["known_fooling_size"]
    table.add_row("fooling set found", f"{fs['size']} cells of value {fs['value']} → {fs['bits']} bits "
                                       f"({'verified' if fs['verified'] else 'NOT verified'}; {fs['restarts']} "
                                       f"passes, seed {fs['seed']})")
    table.add_row("known construction", f"{known} ({'one-way rows' if problem == 'index' else 'two-way'})")
    table.add_row("two-way lower bound", f"{d['two_way_lower_bound_bits']} bits")
    console.print(table)
