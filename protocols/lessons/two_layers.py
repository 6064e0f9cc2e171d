"""Lesson ``two-layers``: why the one-layer communication method stops at one layer (Lemma 5 of [BHBK24]).

The two-layer equality construction (Theorem 6, ``construct:eq2``) is built, checked exhaustively,
refused by the attention protocol (with the reason), and taken apart: its first layer makes every
position depend on both halves, and renumbering its positions makes it compute EQ across *any*
balanced split — so it needs N/2 bits on every balanced partition while its width and precision
grow only like log N.
"""
from __future__ import annotations

import numpy as np

from commsim import Lesson, Step
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import size_arg as _size
from protocols.lessons.drawings import two_layer_drawing

__all__ = ["two_layers"]

#: inputs are checked exhaustively up to this length, on SAMPLE seeded inputs beyond
EXHAUSTIVE_N = 10
SAMPLE = 1024
#: the coordinate of construct:eq2's residual stream where layer 1 writes x_i XOR x_t(i)
XOR_SLOT = 2
#: the lesson computes the model's communication matrix (2^N forwards) up to this length
MATRIX_N = 12


def _positions(pos) -> str:
    return "{" + ", ".join(str(int(p) + 1) for p in pos) + "}"


def two_layers(n: int | None = None) -> Lesson:
    from commsim.contract import InputError
    from commsim import run_reduction
    from commsim import load_plugins, make_model
    from commsim.theory.automaton import ineq
    from commsim.theory.fooling import fooling_set
    from commsim.theory.problems import all_bit_strings
    from protocols.constructions.eq2 import build_eq2, default_format
    from protocols.constructions.orthogonal import start_k
    from protocols.models.transformer import MultiLayerAttention

    n = _size(n, "two-layers")
    N = 2 * n
    rid = "eq-ineq"
    reduction = load_plugins().get("reduction", rid)
    model = make_model("construct:eq2", **reduction.model_context(n))
    info = model.info
    def inputs(S_A, S_B):
        """Every input, or EQ's own sample (half the pairs equal) placed at the positions S_A and S_B."""
        if N <= EXHAUSTIVE_N:
            return all_bit_strings(N).astype(np.int64), f"all {2 ** N} inputs"
        A, B = reduction.problem(n).sample(np.random.default_rng(0), SAMPLE)
        X = np.zeros((SAMPLE, N), dtype=np.int64)
        X[:, S_A], X[:, S_B] = A, B
        return X, f"{SAMPLE} sampled inputs (half with equal halves)"

    X, checked = inputs(np.arange(n), np.arange(n, N))
    out = np.asarray(model.forward(X)).reshape(-1)
    truth = ineq(X)
    steps = [Step(
        f"Two attention layers compute equality on {N} bits",
        "Theorem 6: a two-layer transformer of width and precision O(log N) computes INEQ (1 iff the halves "
        "differ). Layer 1 lets position i > N/2 attend to i − N/2 (nearly orthogonal position codes make the "
        "rounded softmax a hard attention) and an MLP writes x_i XOR x_(i−N/2); layer 2 averages the XORs "
        "uniformly and the readout tests > 0.",
        instance=f"construct:eq2 at N = {N}: {info['layers']} layers, 1 head each, width m = {model.width} "
                 f"(k = {info['k']} sign coordinates), embedding dimension {info['embedding_dim']}, "
                 f"p = {model.precision} bits ({info['format']})\nchecked on {checked}: output = "
                 f"INEQ on {int((out == truth).sum())} of {len(X)}",
        holdings={"alice": f"x_1..x_{n}", "bob": f"x_{n + 1}..x_{N}"},
        inequality=rf"m = {model.width} = O(\log N),\quad p = {model.precision} = O(\log N)",
        reference="Theorem 6 and Appendix F.2 of [BHBK24]; Lemma 2 (nearly orthogonal vectors)")]

    try:
        run_reduction(rid, "construct:eq2", n)
        refusal = "(not refused: a protocol accepted the two-layer model)"
    except InputError as exc:
        refusal = str(exc)
    steps.append(Step(
        "The one-layer protocol refuses it",
        "commsim's attention protocol simulates exactly one layer (Theorem 4). Asked to wrap the two-layer model, "
        "the engine declines and says why:",
        instance=f"commsim run {rid} --model construct:eq2 --n {n}\n→ {refusal}",
        reference="Theorem 4, Lemma 5 and Corollary 13.1 of [BHBK24]"))

    first = MultiLayerAttention(model.token_embedding, model.position_embedding, [model.layers[0]], model.format,
                                model.readout)
    rng = np.random.default_rng(30 + n)
    x = rng.integers(0, 2, N).astype(np.int64)
    rows = [f"{'Alice flips x_j':>16} | layer-1 XOR slot at Bob's positions {_positions(range(n, N))}"]
    base = [float(first.hidden(x[None], query_position=i)[0, XOR_SLOT]) for i in range(n, N)]
    rows.append(f"{'(none)':>16} | " + " ".join(f"{v:g}" for v in base))
    changed, mixed = 0, set()
    for j in range(n):
        y = x.copy()
        y[j] ^= 1
        vals = [float(first.hidden(y[None], query_position=i)[0, XOR_SLOT]) for i in range(n, N)]
        moved = [i + n + 1 for i, (u, v) in enumerate(zip(base, vals)) if u != v]
        changed += bool(moved)
        mixed.update(i - 1 for i in moved)
        rows.append(f"{'x_' + str(j + 1):>16} | " + " ".join(f"{v:g}" for v in vals) +
                    f"   (changes at position {', '.join(map(str, moved)) or '—'})")
    steps.append(Step(
        "Layer 1 already mixes the two halves",
        "The one-layer protocol works because each party can compute the keys and values of its own positions "
        "alone. In a second layer the keys and values come from layer 1's outputs — and there, Bob's position "
        "i depends on Alice's x_(i−N/2). Flip one of Alice's bits and watch Bob's layer-1 outputs:",
        instance=f"x = {_bits(x[:n])} | {_bits(x[n:])}\n" + "\n".join(rows),
        holdings={"alice": f"x_1..x_{n} = {_bits(x[:n])}", "bob": f"x_{n + 1}..x_{N} = {_bits(x[n:])}"},
        inequality=rf"\text{{each of Alice's {n} bits moves a layer-1 output Bob owns: {changed} of {n}}}",
        notes="So Bob cannot even start layer 2's exchange without learning about Alice's bits position by "
              "position; the partial-softmax trick has nothing local to sum.",
        reference="Lemma 5 and Appendix F.4 of [BHBK24]", figures=[two_layer_drawing(x, mixed)]))

    perm_rng = np.random.default_rng(40 + n)
    S_A = np.sort(perm_rng.choice(N, n, replace=False))
    S_B = np.setdiff1d(np.arange(N), S_A)
    pos = np.asarray(model.position_embedding)
    renumbered = np.empty_like(pos)
    renumbered[S_A] = pos[:n]
    renumbered[S_B] = pos[n:]
    moved = MultiLayerAttention(model.token_embedding, renumbered, model.layers, model.format, model.readout)
    X, checked = inputs(S_A, S_B)
    got = np.asarray(moved.forward(X)).reshape(-1)
    want = np.any(X[:, S_A] != X[:, S_B], axis=1).astype(got.dtype)
    fs = fooling_set("eq", n)
    ver = fs.verify()
    matrix_text = ""
    if N <= MATRIX_N:   # the model's own communication matrix on this split: rank from its outputs
        from commsim.theory.comm_matrix import rank_real, search_fooling_set
        from protocols.constructions.lemma5 import communication_matrix
        M, _ = communication_matrix(moved, S_A, S_B)
        found = search_fooling_set(M, restarts=1)
        matrix_text = (f"\nthe model's communication matrix on this split (2^{n} x 2^{n}, from its outputs on every "
                       f"input): rank {rank_real(M)}, a verified fooling set of {found.size} cells"
                       f"{'' if found.verified else ' (NOT verified)'} — more splits: commsim separate two-layers")
    steps.append(Step(
        "Lemma 5: every balanced split, N/2 bits",
        "Renumber the position codes: give Alice's k-th position the code of position k and Bob's k-th the code "
        "of position n + k. The same weights now compare x on S_A with x on S_B, so with Alice holding x_(S_A) "
        "and Bob x_(S_B) the model's output is 1 − EQ of their halves — and EQ_(N/2) needs N/2 bits whatever the "
        "protocol.",
        instance=f"a random balanced split: S_A = {_positions(S_A)}, S_B = {_positions(S_B)}\nrenumbered model "
                 f"checked on {checked}: output = [x_(S_A) ≠ x_(S_B)] on {int((got == want).sum())} of "
                 f"{len(X)}\nEQ_{n} fooling set: {fs.construction} (verified: {ver.ok}){matrix_text}",
        holdings={"alice": f"x at {_positions(S_A)}", "bob": f"x at {_positions(S_B)}"},
        inequality=rf"\mathrm{{CC}}_{{S_A, S_B}}(f) \ge \mathrm{{CC}}(\mathrm{{EQ}}_{{{n}}}) = {n} = N/2",
        reference="Lemma 5 of [BHBK24]; Fact 2 (EQ)"))

    table = [f"{'N':>9} {'m':>5} {'p':>3} {'m·p':>7} {'N/2':>9}  source"]
    lengths = [8, 32, 128, 512] + [2 ** e for e in range(11, 23, 2)]
    crossing = None
    for length in lengths:
        if length <= 512:
            built = build_eq2(length // 2)
            m, p, src = built.width, built.precision, "built (construct:eq2)"
        else:
            k = start_k(length)
            fmt = default_format(length, k)
            m, p, src = k + 1, fmt.bits, "formula (the construction's rules for k and p at this N; not built)"
        if crossing is None and length // 2 > m * p:
            crossing = length
        table.append(f"{length:>9} {m:>5} {p:>3} {m * p:>7} {length // 2:>9}  {src}")
    steps.append(Step(
        "Why the method stops: m·p grows like log² N, N/2 does not",
        "A one-layer model's protocol costs 3m(p + log N)H bits (Theorem 4), which is O(m·p·H·log N) (commsim's "
        "loosening: p + log N ≤ 2p·log N once p ≥ 1 and log N ≥ 1). If some protocol simulated every two-layer model "
        "with O(m·p·H·g(N)) bits, Lemma 5's model (m, p = O(log N)) would force g(N) = Ω(N / log² N). The table "
        "sets the construction's m·p against the N/2 bits it must carry:",
        instance="\n".join(table),
        inequality=r"m p H \cdot g(N) \ge \frac{N}{2},\quad m p H = O(\log^2 N) \implies g(N) = "
                   r"\Omega\left(\frac{N}{\log^2 N}\right)",
        notes=(f"N/2 overtakes m·p from N = {crossing} in this table: from there on the model must carry more bits "
               f"than m·p, so no protocol of O(m·p·H) bits simulates it; a polylog factor (one layer's log N) only "
               f"moves the crossing later, it never removes it (Corollary 13.1)." if crossing else
               "N/2 has not overtaken m·p in this range."),
        reference="Corollary 13.1 and Lemma 5 of [BHBK24]"))
    return Lesson("two-layers", f"Why the method stops at one layer (Lemma 5, N = {N})",
                  "A two-layer transformer of logarithmic width computes equality across any balanced split, so it "
                  "needs N/2 bits of communication: no protocol of the one-layer kind can simulate two layers.",
                  steps, n)
