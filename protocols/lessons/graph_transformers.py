"""Lesson ``graph-transformers``: the first multi-layer protocol and Directed 3-Cycle ([SHT23]).

A graph transformer's token is a node's adjacency row, and row i's softmax reads only X_ij, node i's own query and
every node's key and value.  So with the *nodes* split between Alice and Bob (and some public), each layer costs
one exchange of keys and values, however many layers there are; DISJ on n^2 bits, laid out as a digraph on 3n
nodes whose directed triangles are the common elements, then gives L·H·m·p >= (n^2 - 2)/(4n).  Every number is
computed by the engine (``commsim.prepare``, ``run_reduction``) on the lesson's instance.
"""
from __future__ import annotations

import numpy as np

from commsim import Lesson, Step
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import size_arg as _size
from protocols.lessons.drawings import three_cycle_drawing

__all__ = ["graph_transformers"]

#: the model the protocol steps run: two layers, one head of width 1 at 4 bits
LESSON_MODEL = "graph-attention:layers=2,heads=1,width=1,dim=3,precision=4,seed=1"
#: the smallest graph transformer, and the n at which its exchange falls below n^2 (p >= 2 in fixed point)
SMALL_MODEL, BELOW_N = "graph-attention:layers=1,heads=1,width=1,precision=2,seed=0", 9


def _edges(X: np.ndarray, n: int) -> str:
    names = [f"{g}{i}" for g in "uvw" for i in range(1, n + 1)]        # nodes counted from 1, as the text does
    return ", ".join(f"{names[i]}→{names[j]}" for i, j in zip(*np.nonzero(X)))


def graph_transformers(n: int | None = None) -> Lesson:
    from commsim import prepare
    from commsim.contract import InputError
    from commsim import run_reduction
    from protocols.reductions.graph import (
        check_reduction,
        cycle3_graphs,
        directed_3cycle,
    )
    from protocols.theorems import cycle3_min_lhmp, graph_exchange_bits

    n = _size(n, "graph-transformers")
    N = 3 * n
    rid = "disj-3cycle"
    setup = prepare(rid, LESSON_MODEL, n)
    rng = np.random.default_rng(n)
    a = rng.integers(0, 2, n * n).astype(np.uint8)
    b = (1 - a).astype(np.uint8)
    common = int(rng.integers(n * n))
    a[common] = b[common] = 1
    X = cycle3_graphs(a[None], b[None])[0]
    on_cycle = np.flatnonzero(directed_3cycle(X)[0])
    x, y = (k + 1 for k in divmod(common, n))                              # 1-based, as the text counts
    checked = sum(check_reduction(k) for k in (1, 2))
    cycle_nodes = ", ".join("uvw"[i // n] + str(i % n + 1) for i in on_cycle)
    steps = [Step(
        f"DISJ on n² = {n * n} bits as a digraph on N = {N} nodes",
        "Nodes in three groups U, V, W of n each, numbered 1..n. Alice's bit a_((x−1)·n+y) is the edge u_x → v_y, "
        "Bob's b_((x−1)·n+y) the edge v_y → w_x, and a public matching w_x → u_x closes the loop. Every edge goes "
        "U → V → W → U, so a directed triangle is u_x → v_y → w_x → u_x: it exists exactly when a_((x−1)·n+y) = "
        "b_((x−1)·n+y) = 1.",
        instance=f"a = {_bits(a)}, b = {_bits(b)} (they share element {common + 1}: x = {x}, y = {y})\n"
                 f"edges: {_edges(X, n)}\nnodes on a directed 3-cycle: "
                 f"{cycle_nodes}\n"
                 f"checked on every pair at n = 1, 2 ({checked} pairs): a 3-cycle exists iff the sets intersect",
        holdings={"alice": f"the rows of U (u_x's out-edges): a = {_bits(a)}",
                  "bob": f"the rows of V (v_y's out-edges): b = {_bits(b)}; the rows of W are public"},
        inequality=r"∃\ \text{directed 3-cycle} \iff ∃ x, y \le n:\ a_{(x-1)n+y} = b_{(x-1)n+y} = 1",
        reference="[SHT23] (graph transformers, Directed 3-Cycle); the layout is commsim's construction")]
    steps[0].figures.append(three_cycle_drawing(n, zip(*np.nonzero(X)), on_cycle))

    run = setup.run_instance(a, b)
    encoded = run.encoded
    plan = setup.plan(encoded)
    messages = [(m.sender, m.label, str(m.bits)) for m in run.result.transcript]
    model = setup.model
    steps.append(Step(
        "Partition the nodes: keys and values suffice",
        "Row i's softmax reads X_ij (row i: its owner's), node i's query (from its own state) and every node's key "
        "and value. So per layer and head each party sends the key and value of each node it owns, p bits per "
        "number, finishes its own rows' softmax — and the public rows', whose states both can compute — and goes "
        "on to the next layer. At the end one bit each: the OR of its nodes' answers.",
        instance=f"model {LESSON_MODEL}: L = {model.num_layers}, H = {model.heads}, m = {model.width}, "
                 f"p = {model.precision}\nmessages: {len(messages)}, rounds {run.result.transcript.rounds}, "
                 f"{run.result.transcript.total_bits} bits (the plan: {plan.bits})\nprotocol answer "
                 f"{run.answer}, the model's own forward {run.direct_answer} (the true answer: 1)",
        holdings={"alice": f"{n} nodes (U)", "bob": f"{n} nodes (V); W is public"},
        messages=messages,
        inequality=rf"L \cdot H \cdot 2n \cdot 2mp + 2 = {model.num_layers}\cdot{model.heads}\cdot{2 * n}\cdot 2"
                   rf"\cdot{model.width}\cdot{model.precision} + 2 = {plan.bits}",
        notes="The parties compute with the model's own functions, so their states equal the direct forward's at "
              "every layer, bit for bit (commsim checks it on every instance it runs).",
        reference="[SHT23]; commsim's exact node-partition protocol (protocols/simulators/graph.py)"))

    bound = cycle3_min_lhmp(n)
    steps.append(Step(
        "The bound: L·H·m·p = Ω(N)",
        "A graph transformer deciding Directed 3-Cycle is now a DISJ protocol on n² bits, and DISJ needs n² bits "
        "(the fooling set {(x, complement of x)}). Its 2n owned nodes cost L·H·2n·2m·p + 2 bits:",
        instance=f"n = {n}, N = {N}: n² = {n * n} bits needed; the lesson's model sends {plan.bits}",
        inequality=rf"L H \cdot 2n \cdot 2 m p + 2 \ge n^2 \implies L H m p \ge \frac{{n^2 - 2}}{{4n}} = "
                   rf"{float(bound):.3g} \approx \frac{{N}}{{12}}",
        reference="Fact 1 of [BHBK24] (DISJ); [SHT23]'s 'every graph transformer needs LHm = Ω̃(N)'"))

    below = run_reduction(rid, SMALL_MODEL, BELOW_N, instances=500)
    cert = below.certificate
    steps.append(Step(
        f"Below the bound at n = {BELOW_N}: the model must fail",
        "The smallest graph transformer (one layer, one head, m = 1, p = 2: commsim's fixed point has p ≥ 2) at "
        f"n = {BELOW_N} sends {graph_exchange_bits(1, 1, 1, 2, 2 * BELOW_N)} bits, fewer than n² = {BELOW_N ** 2}: "
        "some input must beat it, and commsim shows one.",
        instance=f"commsim run {rid} --n {BELOW_N} --model {SMALL_MODEL}\nbits {below.bits_used} < "
                 f"{below.lower_bound.bits}; verdict: {below.outcome} ({below.verdict()})"
                 + (f"\ncertificate ({cert.kind}, verified {cert.verified}): the answer is {cert.expected}, the "
                    f"model says {cert.model_output}" if cert is not None else ""),
        inequality=rf"{below.bits_used} < {BELOW_N}^2 = {BELOW_N ** 2}",
        reference="Fact 1 of [BHBK24]; [SHT23]"))

    try:
        run_reduction(rid, "construct:3cycle-pair", n, instances=16)
        refusal = "(not refused)"
    except InputError as exc:
        refusal = str(exc)
    steps.append(Step(
        "The other side: a higher-order unit of constant size",
        "Let node i attend over *pairs* (j, k) with a logit reading the triangle's edges X_ij, X_jk, X_ki (and a "
        "sink): with β = 4, sink 10 and 2 fraction bits the attention is hard and node i outputs exactly 1 iff it "
        "lies on a directed triangle — width 1, 8 bits, at every N. Its pair logits read X_jk from another node's "
        "row, so the node-partition exchange does not apply:",
        instance=f"commsim run {rid} --model construct:3cycle-pair --n {n}\n→ {refusal}",
        inequality=r"m p = 8 \quad\text{vs}\quad L H m p \ge \frac{n^2 - 2}{4n}",
        notes="`commsim separate 3cycle` sets the two sides side by side and verifies the unit (every loopless "
              "digraph for N ≤ 4, samples and the reduction's graphs beyond).",
        reference="commsim's definition and construction (construct:3cycle-pair); [SHT23] names the unit"))
    return Lesson("graph-transformers", f"Graph transformers and Directed 3-Cycle (n = {n}, N = {N} nodes)",
                  "With the nodes split, each layer of a graph transformer costs one exchange of keys and values; "
                  "DISJ on n² bits as a digraph's triangles then forces L·H·m·p ≥ (n² − 2)/(4n).", steps, n)
