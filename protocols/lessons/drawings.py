"""The drawings of the reductions, as the plain figure entries a page draws (``commsim.render.figures``): each
built from a lesson's own instance -- its tokens, who owns each position, the positions that decide it.

Positions are given 0-based here (as the arrays index them); the drawing numbers them from 1, as the papers do.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence


def sequence_drawing(title: str, caption: str, tokens: Sequence, owners: Sequence[str], *,
                     marks: Iterable[int] = (), mark_label: str = "", groups: Iterable[tuple] = (),
                     arcs: Iterable[tuple[int, int]] = (), legend: dict | None = None) -> dict:
    """A ``tokens`` figure entry: one cell per position (its token's text and its owner, "alice", "bob" or
    "public"), the marked positions, labelled groups ``(start, end, label, owner)`` (0-based, end exclusive) and
    arcs between positions."""
    if len(tokens) != len(owners):
        raise ValueError(f"{len(tokens)} tokens but {len(owners)} owners")
    return {"kind": "tokens", "title": title, "caption": caption,
            "cells": [{"text": str(t), "owner": o} for t, o in zip(tokens, owners)],
            "marks": sorted(int(m) for m in marks), "mark_label": mark_label,
            "groups": [{"start": int(s), "end": int(e), "label": lab, "owner": o} for s, e, lab, o in groups],
            "arcs": [[int(i), int(j)] for i, j in arcs], "legend": legend or {}}


def digraph_drawing(title: str, caption: str, layers: Sequence[tuple[str, str, Sequence[str]]],
                    edges: Iterable[tuple[str, str]], *, marks: Iterable[str] = (), mark_label: str = "") -> dict:
    """A ``digraph`` figure entry: layers ``(name, owner, node names)`` side by side, the edges, marked nodes."""
    names = {v for _, _, nodes in layers for v in nodes}
    edges = [[str(a), str(b)] for a, b in edges]
    unknown = {v for e in edges for v in e} - names
    if unknown:
        raise ValueError(f"edges name nodes no layer has: {sorted(unknown)}")
    return {"kind": "digraph", "title": title, "caption": caption,
            "layers": [{"name": name, "owner": owner, "nodes": list(nodes)} for name, owner, nodes in layers],
            "edges": edges, "marks": list(marks), "mark_label": mark_label}


def _halves(n: int, total: int) -> list[str]:
    return ["alice"] * n + ["bob"] * (total - n)


def match3_drawing(z, a, b) -> dict:
    """attention-disj: DISJ's sets written into the Match3 sequence z (Alice's z_1..z_n, Bob's z_(n+1)..z_N),
    the zero-sum triple through position N of the first common element marked."""
    n, N = len(a), len(z)
    common = [i for i in range(n) if a[i] and b[i]]
    marks, arcs = [], []
    if common:
        i = common[0]
        marks, arcs = [i, n + i, N - 1], [(i, N - 1), (n + i, N - 1)]
    bits = "".join(str(int(v)) for v in a), "".join(str(int(v)) for v in b)
    return sequence_drawing(
        "DISJ written into a Match3 sequence", "z_i = i + 1 where a_i = 1 (else 1), z_(n+i) = M − (i + 1) where "
        "b_i = 1 (else 1), z_N = 0; the marked triple sums to 0 mod M" if common else "no common element: no "
        "triple through position N sums to 0 mod M", [int(t) for t in z], _halves(n, N), marks=marks,
        mark_label=f"z_N + z_{marks[0] + 1} + z_{marks[1] + 1} ≡ 0: element {marks[0] + 1} is common" if common
        else "", arcs=arcs, groups=[(0, n, f"a = {bits[0]}", "alice"), (n, 2 * n, f"b = {bits[1]}", "bob"),
                                    (2 * n, N, "z_N = 0", "bob")])


def mqar_drawing(names: Sequence[str], a, b) -> dict:
    """rnn-disj: the MQAR prompt -- Alice's labelled keys (v_i, a_i), then Bob's n queries."""
    n = len(a)
    owners = ["alice"] * (2 * n) + ["bob"] * (len(names) - 2 * n)
    hits = [i for i in range(n) if a[i] and b[i]]
    marks = [p for i in hits for p in (2 * i, 2 * i + 1, 2 * n + i)]
    return sequence_drawing(
        "The MQAR prompt", "n keys with their labels (Alice's, the labels are her set a), then the n keys again as "
        "queries (Bob's part); at each query the model must output the label of the matching key",
        list(names), owners, marks=marks, mark_label="a key in both sets: its label is 1 and Bob queries it"
        if hits else "", groups=[(0, 2 * n, "labelled keys (v_i, a_i)", "alice"),
                                 (2 * n, len(names), "queries v_1..v_n", "bob")])


def odd_even_drawing(symbols: str) -> dict:
    """attention-dyck: a member of the fooling set, its odd positions Alice's and its even positions Bob's."""
    owners = ["alice" if k % 2 == 0 else "bob" for k in range(len(symbols))]
    return sequence_drawing(
        "Dyck-(2,2), split odd/even", f"the member {symbols}: Alice holds {symbols[0::2]} (positions 1, 3, 5, ...), "
        f"Bob holds {symbols[1::2]} (positions 2, 4, 6, ...)", list(symbols), owners,
        legend={"alice": "Alice: odd positions", "bob": "Bob: even positions"})


def compose_drawing(names: Sequence[str], n: int, x: int, y: int) -> dict:
    """compose: the [PNP24] prompt -- g's n pairs (Alice), f's n pairs and the query (Bob); the pairs the
    answer runs through, f(x) and g(f(x)), marked."""
    owners = ["alice"] * n + ["bob"] * (len(names) - n)
    return sequence_drawing(
        "The composition prompt", f"g's pairs (Alice), f's pairs and the query a{x}? (Bob); the answer "
        f"g(f(x)) goes through f(a{x}) = b{y}, then g(b{y})", list(names), owners,
        marks=[n + x, y, len(names) - 1], mark_label="the query and the two pairs it reads",
        groups=[(0, n, "g", "alice"), (n, 2 * n, "f", "bob"), (2 * n, len(names), "query", "bob")])


def two_layer_drawing(x, mixed: Iterable[int]) -> dict:
    """two-layers: the input split in halves; layer 1 makes position n + i attend to i (the arcs), so Bob's
    layer-1 outputs (marked: those that moved when one of Alice's bits flipped) depend on Alice's input."""
    N = len(x)
    n = N // 2
    return sequence_drawing(
        "Why a second layer breaks the split", "layer 1: Bob's position n + i attends to Alice's position i (arcs) "
        "and writes their XOR; the marked positions are Bob's layer-1 outputs that changed when one of Alice's bits "
        "was flipped, so layer 2's keys and values are no longer computable by one party alone",
        [int(v) for v in x], _halves(n, N), marks=mixed, mark_label="Bob's layer-1 output moves with Alice's bit",
        arcs=[(i, n + i) for i in range(n)], groups=[(0, n, "x_1..x_n", "alice"), (n, N, "x_(n+1)..x_N", "bob")])


def three_cycle_drawing(n: int, edges: Iterable[tuple[int, int]], on_cycle: Iterable[int]) -> dict:
    """graph-transformers: the U → V → W digraph of Directed 3-Cycle (node k of 3n: group k // n), Alice's U
    rows, Bob's V rows, W public; the nodes on a directed triangle marked."""
    names = [f"{g}{i}" for g in "uvw" for i in range(1, n + 1)]
    return digraph_drawing(
        "Directed 3-Cycle from DISJ", "u_x → v_y is Alice's bit a_((x−1)n+y), v_y → w_x Bob's bit b_((x−1)n+y), "
        "w_x → u_x public (dashed); a directed triangle is a common element",
        [("U", "alice", names[:n]), ("V", "bob", names[n:2 * n]), ("W", "public", names[2 * n:])],
        [(names[i], names[j]) for i, j in edges], marks=[names[k] for k in on_cycle],
        mark_label="on a directed 3-cycle")
