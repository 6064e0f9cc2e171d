"""``commsim fooling``: the fooling set of a source problem — exact size, lower bound, verification."""
from __future__ import annotations

import sys

import click
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option
from commsim.cli.files import force_option
from commsim.cli.html import check_html, command_line, html_option, write_html
from commsim.core.limits import check_size
from commsim.theory.comm_matrix import input_text
from commsim.theory.fooling import FOOLING_PROBLEMS, fooling_set


def decimal(x: int) -> str:
    """The exact decimal digits of a (possibly huge) integer, beyond Python's default digit limit."""
    limit = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)
        return str(x)
    finally:
        sys.set_int_max_str_digits(limit)


def exact_size(x: int):
    """An int while JSON numbers hold it exactly, else its decimal string (the contract's ``size``)."""
    return x if x < 2 ** 53 else decimal(x)


def size_text(x: int) -> str:
    if x < 10 ** 15:
        return f"{x:,}"
    if x & (x - 1) == 0:
        return f"2^{x.bit_length() - 1} ({len(decimal(x))} digits)"
    return f"≈ 2^{x.bit_length() - 1} ({len(decimal(x))} digits)"


#: the most fooling-set members one table shows
MAX_MEMBERS_SHOWN = 10_000


@cli.command("fooling")
@click.argument("problem", metavar="PROBLEM", type=click.Choice(FOOLING_PROBLEMS))
@click.option("--n", "n", type=int, required=True, help="Problem size (n bits; string length N for dyck22).")
@click.option("--verify", is_flag=True, help="Check the fooling property exhaustively (small n only).")
@click.option("--members", "show", type=int, default=4, show_default=True, help="How many members to show.")
@html_option
@force_option
@json_option
def fooling_command(problem, n, verify, show, html_path, as_json):
    """The fooling set of PROBLEM at size n: exact size, the lower bound it gives, and (with
    --verify) an exhaustive check of the fooling property.

    \b
    index   one-way: all 2^n Alice inputs need distinct messages (n bits)
    eq      {(x, x)}, value 1 (n bits)
    disj    {(x, complement x)}, value 0 — DISJ is 1 on intersecting sets (n bits)
    dyck22  all 2^(N-1) members of Dyck-(2,2) of length N, odd/even split (N - 1 bits, Lemma 1)

    \b
    Examples:
      commsim fooling dyck22 --n 1000 --json
      commsim fooling dyck22 --n 12 --verify
      commsim fooling eq --n 10 --verify --json
    """
    check_size(show, "--members", 0, MAX_MEMBERS_SHOWN, "members are drawn one row each")
    check_html(html_path)
    fs = fooling_set(problem, n)
    verification = fs.verify() if verify else None
    data = fs.to_dict(verification)
    data["size"] = exact_size(fs.size)
    if html_path:
        from commsim.render.reports import fooling_page
        write_html(html_path, fooling_page(fs, data, command_line()))
    if as_json:
        emit_json(data)
        return
    bound = fs.lower_bound
    table = Table(title=f"fooling set for {problem} (n = {n})", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    table.add_row("construction", fs.construction)
    table.add_row("size", size_text(fs.size))
    table.add_row("log2 size", f"{fs.log2_size:.6g}")
    table.add_row("lower bound", f"{bound.bits} bits — {bound.statement}")
    table.add_row("source", f"{bound.source} ({bound.conditions.describe()})")
    if problem == "index":
        two_way = fs.bound_for("two-way")
        table.add_row("two-way", f"[yellow]does not apply[/]: {two_way.reason}")
    if verification is None:
        table.add_row("verified", "not asked (use --verify)")
    else:
        mark = "[green]yes[/]" if verification.ok else "[red]NO[/]"
        table.add_row("verified", f"{mark} — {verification.method}")
        if verification.counterexample:
            table.add_row("counterexample", str(verification.counterexample))
    console.print(table)
    if show > 0:
        count = min(show, fs.size)
        strings = fs.strings(0, count) if problem == "dyck22" else None    # unranked once (slow at large N)
        A, B = fs.problem.split(strings) if strings is not None else fs.member_arrays(0, count)
        members = Table(title=f"first {count} members", show_header=True)
        members.add_column("#", justify="right")
        members.add_column("Alice")
        members.add_column("Bob")
        if problem == "dyck22":
            members.add_column("string")
        for i in range(count):
            row = [str(i + 1), input_text(fs.problem, A[i]), input_text(fs.problem, B[i]) if B is not None else "any b"]
            if problem == "dyck22":
                row.append(fs.language.decode(strings[i]))
            members.add_row(*(_shortened(cell) for cell in row))
        console.print(members)


#: the most characters of one member shown in the table (the rest as "… (k more)"; --json has them all)
MEMBER_CHARS = 120


def _shortened(text: str) -> str:
    """A long member as its first MEMBER_CHARS characters and how many more there are."""
    return text if len(text) <= MEMBER_CHARS else f"{text[:MEMBER_CHARS]}… ({len(text) - MEMBER_CHARS} more)"
