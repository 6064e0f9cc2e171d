"""``commsim matrix``: the communication matrix of a small problem and the bounds read off it."""
from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.cli.files import check_target, force_option, refuse_empty, write_text
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.errors import InputError
from commsim.core.limits import check_seed
from commsim.plugins import load_plugins
from commsim.theory.comm_matrix import analyze_matrix
from commsim.theory.model_matrix import JSON_MATRIX_CELLS, matrix_csv, matrix_json, render_answers
from commsim.theory.problems import PROBLEM_NAMES

#: the figure is drawn when the matrix is at most this many rows and columns
FIGURE_MAX_SIDE = 64


@cli.command("matrix")
@click.argument("problem", metavar="[PROBLEM]", type=click.Choice(PROBLEM_NAMES), required=False)
@click.option("--n", "n", type=int, required=True, help="Problem size (n bits; string length N for dyck22).")
@click.option("--model", "model_spec", default=None, metavar="SPEC",
              help="The communication matrix of this model's own function (with --reduction): its direct forward "
                   "on every (Alice, Bob) instance, beside the task's matrix.")
@click.option("--reduction", "reduction_id", default=None, metavar="R",
              help="The reduction whose partition and encoding the --model matrix uses (e.g. index-idxl, eq-ineq).")
@click.option("--restarts", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Greedy passes of the fooling-set search.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fooling-set search.")
@click.option("--figure/--no-figure", default=True, show_default=True,
              help=f"Draw the matrix (when at most {FIGURE_MAX_SIDE} x {FIGURE_MAX_SIDE}).")
@click.option("--out", "out", callback=refuse_empty, default=None, metavar="FILE",
              help="Write the whole matrix as CSV (a header of Bob's inputs, then a line per Alice input). --json "
                   f"holds it up to {JSON_MATRIX_CELLS} cells and says when it is left out.")
@html_option
@plugin_option
@force_option
@json_option
def matrix_command(problem, n, model_spec, reduction_id, restarts, seed, figure, out, html_path, plugins, as_json):
    """The communication matrix M[x, y] = f(x, y) of PROBLEM (rows: Alice, columns: Bob) and its
    bounds: log-rank over the reals and GF(2), the one-way bound ceil(log2 #distinct rows), and a
    fooling set found by a bounded, seeded search (verified pairwise).

    With --model SPEC --reduction R: the matrix of the model's own function under R's partition (its direct
    forward on every instance at size n, any depth), its bounds beside the task's.  They bound any protocol
    that outputs this model's answers -- the model's function, not its size.

    \b
    Examples:
      commsim matrix eq --n 4
      commsim matrix dyck22 --n 6 --json
      commsim matrix disj --n 8 --restarts 8 --seed 1 --no-figure
      commsim matrix --model construct:eq2 --reduction eq-ineq --n 3
      commsim matrix disj --n 6 --out disj6.csv
    """
    check_seed(seed, "--seed")
    check_html(html_path)
    if out is not None:
        check_target(out, "--out")
    load_plugins(plugins)           # a --plugin's model kinds and reductions, for --model and --reduction
    if model_spec is not None or reduction_id is not None:
        _model_matrix(problem, n, model_spec, reduction_id, restarts, seed, figure, out, html_path, as_json)
        return
    if problem is None:
        raise InputError("give a problem (index, eq, disj, dyck22), or --model SPEC --reduction R",
                         "problem")
    report = analyze_matrix(problem, n, restarts=restarts, seed=seed)
    d = dict(report.to_dict(), matrix=matrix_json(report.matrix))
    _write_csv(out, report.matrix)
    if html_path:
        from commsim.render.reports import matrix_page
        write_html(html_path, matrix_page(report, command_line()))
    if as_json:
        emit_json(d)
        return
    M = report.matrix
    rows, cols = M.shape
    if figure and rows <= FIGURE_MAX_SIDE and cols <= FIGURE_MAX_SIDE:
        _draw(M, problem)
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
    _say_written(out)


def _write_csv(out, cm) -> None:
    """The whole matrix to ``--out`` (through the safe writer), when given."""
    if out is not None:
        write_text(out, matrix_csv(cm), option="--out")


def _say_written(out) -> None:
    if out is not None:
        console.print(f"matrix written to {escape(str(out))} (CSV)")


def _draw(M, problem: str) -> None:
    """The matrix as text, rows labelled by Alice's inputs (another answer than 0 or 1, a model's, as ▒)."""
    rows = M.shape[0]
    other = ", ▒ = another answer" if ((M.matrix != 0) & (M.matrix != 1)).any() else ""
    console.print(f"[bold]{escape(f'M[x, y] = {problem}(x, y)')}[/]  (█ = 1, · = 0{other}; rows: Alice, "
                  f"columns: Bob)")
    width = max(len(M.input_text("alice", i)) for i in range(rows))
    for i, line in enumerate(render_answers(M.matrix)):
        console.print(f"{M.input_text('alice', i):>{width}} {line}", markup=False)


def _model_matrix(problem, n, model_spec, reduction_id, restarts, seed, figure, out, html_path, as_json) -> None:
    """``matrix --model SPEC --reduction R``: the model's function matrix beside the task's."""
    from commsim.runs.model_function import model_answers
    from commsim.theory.model_matrix import WHAT_IT_BOUNDS, analyze_model_matrix
    if model_spec is None or reduction_id is None:
        missing = "--reduction" if model_spec is not None else "--model"
        raise InputError(f"{missing}: a model's matrix needs both --model SPEC and --reduction R", missing.lstrip("-"))
    if html_path:
        raise InputError("--html: the page is drawn for a problem's matrix; use --json for a model's", "html")
    task, answers, how = model_answers(reduction_id, model_spec, n)
    if problem is not None and problem != task.name:
        raise InputError(f"{reduction_id} reduces {task.name}, not {problem}", "problem")
    report = analyze_model_matrix(task, answers, reduction=reduction_id, model=model_spec, evaluated_by=how,
                                  restarts=restarts, seed=seed)
    d = report.to_dict()
    _write_csv(out, report.model_matrix.matrix)
    if as_json:
        emit_json(d)
        return
    own, theirs = report.model_matrix, report.task_matrix
    rows, cols = own.matrix.matrix.shape
    if figure and rows <= FIGURE_MAX_SIDE and cols <= FIGURE_MAX_SIDE:
        _draw(own.matrix, f"{model_spec} on {reduction_id}")
    table = Table(title=escape(f"the function of {model_spec} on {reduction_id} (n = {n}) beside {task.name}"))
    for column in ("", "model's function", f"task: {task.name}"):
        table.add_column(column, style="bold" if not column else None)

    def side(r) -> dict:
        x = r.to_dict()
        fs = x["fooling_search"]
        return {"shape": f"{x['rows']} x {x['cols']}, {int((r.matrix.matrix == 1).sum())} ones",
                "rank over the reals": str(x["rank_real"]) + (f" (mod 2^31-1: {x['rank_mod_p']})"
                                                              if x["rank_mod_p"] is not None else ""),
                "rank over GF(2)": str(x["rank_gf2"]),
                "log-rank bound": f"{x['log_rank_bits']} bits (reals), {x['gf2_rank_bits']} bits (GF(2))",
                "one-way bound": f"{x['one_way_bits']} bits ({x['distinct_rows']} distinct rows)",
                "fooling set found": f"{fs['size']} cells of value {fs['value']} → {fs['bits']} bits "
                                     f"({'verified' if fs['verified'] else 'NOT verified'})",
                "two-way lower bound": f"{x['two_way_lower_bound_bits']} bits"}
    a, b = side(own), side(theirs)
    for key in a:
        table.add_row(key, a[key], b[key])
    table.add_row("instances the model gets wrong", f"{d['disagreements']} of {d['cells']}", "")
    others = {v: c for v, c in d["model_answers"].items() if v not in (0, 1)}
    if others:
        table.add_row("answers other than 0 and 1", ", ".join(f"{v} on {c} cells" for v, c in others.items()) +
                      " (a many-valued function: the bounds hold for it)", "")
    console.print(table)
    console.print(f"evaluated by {how}; {WHAT_IT_BOUNDS}.")
    _say_written(out)
