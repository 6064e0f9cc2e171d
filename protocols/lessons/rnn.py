"""Lessons ``rnn-index``, ``rnn-eq`` and ``rnn-disj``: recurrent models against one-way lower bounds.

Each lesson walks through one reduction with a concrete instance: the hidden-state handoff
(Theorem 2 of [BHBK24]) run by the real runner, the source problem's bound checked exhaustively,
a model that meets the bound exactly (the memorizing recurrence) and one a bit short of it, whose
certificate — two Alice inputs handing off the same state — is found and verified by the engine.
"""
from __future__ import annotations

import numpy as np

from commsim import Lesson, Step
from protocols.lessons.common import bits_text as _bits
from protocols.lessons.common import (
    engine,
    messages_of,
    run_one,
    tokens_text,
    value_text,
)
from protocols.lessons.common import size_arg as _size
from protocols.lessons.drawings import mqar_drawing
from protocols.theorems import handoff_bits

__all__ = ["rnn_index", "rnn_eq", "rnn_disj", "engine", "run_one", "messages_of", "tokens_text"]


# ---- the engine calls every lesson makes ---------------------------------------------------------
def _states(model, tokens, upto: int) -> list[str]:
    """The exact state bits h_1 .. h_upto of a recurrent model on one token row."""
    row = np.asarray(tokens).reshape(1, -1)
    out = []
    for t in range(1, upto + 1):
        h, _ = model.run(row[:, :t])
        out.append(str(model.format.encode(h)))
    return out


#: lessons run every instance up to this many, and a seeded sample of SAMPLE beyond
EXHAUSTIVE = 1 << 16
SAMPLE = 4096


def _run(reduction_id: str, spec: str, n: int, exhaustive: int = EXHAUSTIVE):
    from commsim import run_reduction
    from commsim import load_plugins
    problem = load_plugins().get("reduction", reduction_id).problem(n)
    count = None if problem.input_pairs <= exhaustive else min(SAMPLE, exhaustive)
    return run_reduction(reduction_id, spec, n, instances=count, seed=0)


def _certificate_step(title: str, report, reduction, problem, model, simulator, source: str, why: str) -> Step:
    """A step showing a collision certificate: both Alice inputs run through the runner."""
    cert = report.certificate
    below = report.lower_bound.bits is not None and report.bits_used < report.lower_bound.bits
    if cert is None or cert.kind != "collision" or not below:
        what = (f"it is wrong on some instances anyway (accuracy {report.model_accuracy:.4f}); "
                f"{cert.explanation}" if cert is not None else
                f"no certificate: {report.certificate_search or 'the model is right on every instance run'}")
        return Step(
            title,
            f"This model hands off m·p = {report.bits_used} bits against a bound of {report.lower_bound.bits}: "
            + ("the bound forces a collision, " if below else "the bound does not force a failure here; ") + what,
            instance=f"commsim run {report.reduction} --model {report.model} --n {report.n}: bits used "
                     f"{report.bits_used}, bound {report.lower_bound.bits}, accuracy {report.model_accuracy:.4f}",
            inequality=f"m p = {report.bits_used} " + ("<" if below else r"\ge") + f" {report.lower_bound.bits}",
            notes=report.certificate_search, reference=source)
    other = cert.details.get("colliding_alice_input")
    msgs, lines = [], []
    for label, a in (("x", cert.alice_input), ("x'", other)):
        if a is None:
            continue
        _, result, answer, direct = run_one(reduction, problem, model, simulator, a, cert.bob_input)
        truth = int(problem.evaluate(np.asarray(a), np.asarray(cert.bob_input) if np.ndim(cert.bob_input)
                                     else int(cert.bob_input)))
        for sender, lab, bits in messages_of(result.transcript):
            msgs.append((sender, f"{lab} for Alice's {label} = {_bits(a)}", bits))
        lines.append(f"Alice's {label} = {_bits(a)}, Bob's {_bob_text(cert.bob_input)}: {problem.name} = {truth}, "
                     f"the protocol answers {answer}, the model's direct forward answers {direct}")
    same = len({m[2] for m in msgs}) == 1
    return Step(
        title,
        f"{report.bits_used} < {report.lower_bound.bits} bits: by pigeonhole two Alice inputs must hand off the "
        f"same state. The engine's certificate search found the pair x, x' below; Bob's input separates them, "
        f"but Bob only sees the message, so the model answers the same on both — and is wrong on one. {why}",
        instance="\n".join(lines),
        holdings={"alice": f"x or x' (she cannot tell Bob which: the messages are {'identical' if same else 'NOT identical'})",
                  "bob": _bob_text(cert.bob_input)},
        messages=msgs,
        inequality=rf"2^{{{problem.n}}} \text{{ Alice inputs}} > 2^{{{report.bits_used}}} \text{{ messages}}"
                   rf" \implies h(x) = h(x') \text{{ for some }} x \ne x'",
        notes=f"search: {report.certificate_search}. Certificate verified by a direct forward: {cert.verified}.",
        reference=source,
        figures=[{"kind": "certificate", "certificate": cert.to_dict(), "problem": problem.name,
                  "caption": "the two Alice inputs hand off the same state; "
                             + (f"highlighted: position {int(cert.bob_input) + 1}, Bob's index, where they differ"
                                if np.ndim(cert.bob_input) == 0 else "highlighted: the positions where they differ")}])


def _bob_text(y) -> str:
    """Bob's input: an index as the papers' 1-based position b, else its bits."""
    return f"b = {int(y) + 1}" if np.ndim(y) == 0 else f"y = {value_text(y)}"


def _elman_seed(reduction_id: str, width: int, n: int, seeds: int = 16) -> tuple[int, int]:
    """The seed (of 0..seeds-1) whose Elman model maps the 2^n Alice inputs to the most distinct handoff
    states, and that number (checked by running every input's prefix through the model)."""
    best = (0, -1)
    for seed in range(seeds):
        reduction, problem, model, _ = engine(reduction_id, f"elman:width={width},precision=2,seed={seed}", n)
        A = problem.alice_inputs()
        encoded = reduction.encode(problem, A, np.zeros(len(A), dtype=np.int64))
        h, _ = model.run(np.asarray(encoded.tokens)[:, :n])
        states = len({str(model.format.encode(row)) for row in np.asarray(h).reshape(len(A), -1)})
        if states > best[1]:
            best = (seed, states)
    return best


def _instance(problem, seed: int):
    rng = np.random.default_rng(seed)
    A, B = problem.sample(rng, 1)
    return np.asarray(A[0]), (np.asarray(B[0]) if np.ndim(B[0]) else int(B[0]))


def _budget_line(task: str, width: int, precision: int) -> tuple[int | None, str]:
    """max N for a recurrent model of the given size on ``task``: ``commsim budget``'s answer."""
    from commsim import bit_budget as budget
    try:
        rep = budget("rnn", width, precision, task)
        return rep.max_n, f"commsim budget --arch rnn --width {width} --precision {precision} --reduction {task}: " \
                          f"max N = {rep.max_n} tokens, n = {rep.run_n} symbols ({rep.verdict})"
    except NotImplementedError:
        return None, ""


# ---- rnn-index -----------------------------------------------------------------------------------
def rnn_index(n: int | None = None) -> Lesson:
    n = _size(n, "rnn-index")
    rid = "index-idxl"
    reduction, problem, model, simulator = engine(rid, "memorize", n)
    a, b = _instance(problem, 7 + n)
    encoded, result, answer, direct = run_one(reduction, problem, model, simulator, a, b)
    tokens = encoded.tokens[0]
    states = _states(model, tokens, n)
    m, p = model.state_units, model.precision
    steps = [Step(
        "A recurrent model is a machine with m·p bits of state",
        "A recurrent model reads the sequence left to right and carries only its state h_t: m numbers of p bits "
        "each. Whatever it will ever say about the rest of the input depends on the prefix only through h_t, "
        "so it has at most 2^(m·p) distinguishable states.",
        instance=f"index lookup (IdxL) from INDEX_{n}: Alice's a = {_bits(a)}, Bob's b = {b + 1}, so the "
                 f"answer is a_b = {int(a[b])}.\nmodel input ({encoded.seq_len} tokens): "
                 f"{tokens_text(reduction, n, tokens)}\nmodel: {model.spec} — {model.describe_state()}, "
                 f"m = {m} units of p = {p} bit{'s' if p != 1 else ''}\nstates after each of Alice's tokens: "
                 + ", ".join(f"h_{t + 1} = {s}" for t, s in enumerate(states)),
        holdings={"alice": f"a = {_bits(a)}: the symbols s_1..s_{n} (positions 1..{n})",
                  "bob": f"b = {b + 1}: the index token {reduction.vocabulary(n)[int(tokens[-1])]} (position {n + 1})"},
        inequality=rf"\text{{states}} \le 2^{{m p}} = 2^{{{m} \cdot {p}}} = 2^{{{handoff_bits(m, p)}}}",
        reference="Theorem 2 of [BHBK24] (setting; Appendix C.1)")]
    steps.append(Step(
        "Theorem 2: the hidden-state handoff is a one-way protocol",
        "Split the sequence where Alice's part ends. Alice runs the model on her prefix and sends h_t — exactly "
        "m·p bits, once. Bob loads h_t, feeds his own tokens and reads the output. The runner below carried out "
        "this exchange; Bob's answer equals the model's direct forward on the whole sequence.",
        instance=f"Bob's output: {answer} (direct forward: {direct}; INDEX answer a_b = {int(a[b])})",
        holdings={"alice": f"s_1..s_{n} = {_bits(a)}", "bob": f"the index token (b = {b + 1}) and h_{n} once it arrives"},
        messages=messages_of(result.transcript),
        inequality=rf"\text{{bits}} = m p = {m} \cdot {p} = {result.transcript.total_bits}",
        notes=f"one message, Alice to Bob: a one-way protocol ({result.transcript.rounds} round).",
        reference="Theorem 2 of [BHBK24] (Appendix C.1)"))
    from commsim.theory.fooling import fooling_set
    fs = fooling_set("index", n)
    ver = fs.verify()
    x1, x2 = fs.member(1)[0], fs.member(2)[0]
    diff = int(np.flatnonzero(np.asarray(x1) != np.asarray(x2))[0])
    steps.append(Step(
        f"INDEX_{n} needs {n} bits from Alice",
        "In a one-way protocol Bob answers from Alice's message and his index alone. If two different Alice "
        "inputs got the same message, Bob would answer alike at an index where they differ — and be wrong on one. "
        "So all 2^n Alice inputs need distinct messages.",
        instance=f"e.g. {_bits(x1)} and {_bits(x2)} differ at position {diff + 1}: INDEX = {int(x1[diff])} vs "
                 f"{int(x2[diff])}; checked for every pair of the {fs.size} Alice inputs",
        holdings={"alice": f"a in {{0,1}}^{n}", "bob": f"b in 1..{n}"},
        inequality=rf"\text{{one-way CC}}(\mathrm{{INDEX}}_{{{n}}}) \ge \log_2 2^{{{n}}} = {n}",
        notes=f"verified: {ver.ok} ({ver.method})",
        reference=f"{fs.source}; Fact 3 of [BHBK24]"))
    good = _run(rid, "memorize", n)
    steps.append(Step(
        "Theorem 3: m·p ≥ n, and the bound is tight",
        "Put the two steps together: a recurrent model doing index lookup on n symbols gives a one-way INDEX_n "
        "protocol of m·p bits, so m·p ≥ n (the paper's N is this n, the symbols indexed into; the model reads "
        "N = n + 1 tokens with the index). A recurrence that simply stores the n symbols (one bit per unit) meets "
        "the bound with equality — and is right on every instance.",
        instance=f"commsim run {rid} --model memorize --n {n}: {good.instances_run} instances ({good.instances}), "
                 f"bits used {good.bits_used}, lower bound {good.lower_bound.bits}, correct on all: "
                 f"{good.model_correct}, protocol = direct forward on all: {good.protocol_matches_model}",
        holdings={"alice": f"s_1..s_{n}", "bob": "the index token"},
        inequality=rf"m p = {good.bits_used} \ge n = {good.lower_bound.bits}",
        reference="Theorem 3 of [BHBK24]"))
    short_spec = f"memorize:capacity={n - 1}"
    short = _run(rid, short_spec, n)
    r2, p2, m2, w2 = engine(rid, short_spec, n)
    steps.append(_certificate_step(
        f"One bit short: {short_spec} must fail", short, r2, p2, m2, w2, "Theorem 3 of [BHBK24]; pigeonhole",
        f"Accuracy over all instances: {short.model_accuracy:.4f}."))
    w = max(1, (n - 1) // 2)
    seed, distinct = _elman_seed(rid, w, n)
    rnn_spec = f"elman:width={w},precision=2,seed={seed}"
    rnn = _run(rid, rnn_spec, n)
    r3, p3, m3, w3 = engine(rid, rnn_spec, n)
    steps.append(_certificate_step(
        f"Any recurrence: a real Elman RNN with m·p = {rnn.bits_used} bits", rnn, r3, p3, m3, w3,
        "Theorem 3 of [BHBK24] (the bound holds for every g_t, f_t)",
        f"This seeded Elman RNN (seed {seed}: of seeds 0..15, the one whose states differ most) maps the {2 ** n} "
        f"Alice inputs to {distinct} distinct states, counted by running each one; at most 2^(m·p) = "
        f"{2 ** rnn.bits_used} are possible, so however the weights are chosen some inputs share a state. Nothing "
        "here depends on how the model was trained: the argument only counts states."))
    max_n, line = _budget_line(rid, 128, 64)
    attention = _run(rid, "construct:idxl", n, exhaustive=1 << 12)
    steps.append(Step(
        "What the bound says at scale — and why attention escapes it",
        "m·p ≥ n caps the number n of symbols a recurrent model can index into; budget counts tokens, N = n + 1 "
        "with the index token, so its max N is one more than the largest n. A one-layer attention model is not "
        "bound: in its protocol (Theorem 4) the party holding the query speaks, and on index lookup's split that "
        "is Bob — one-way Bob → Alice, the direction the n-bit bound (Alice → Bob) does not cover, and INDEX is easy "
        "that way round (Bob sends b: ⌈log2 n⌉ bits). Theorem 1's construction solves index lookup with width "
        "O(log N).",
        instance=(f"{line}\n" if line else f"m = 128, p = 64: m·p = {128 * 64}, so n ≤ {128 * 64}\n")
        + f"commsim run {rid} --model construct:idxl --n {n}: {attention.instances_run} instances "
          f"({attention.instances}), bits used {attention.bits_used}, correct on all: "
          f"{attention.model_correct}; bound applies: {attention.lower_bound.applies} — {attention.lower_bound.note}",
        inequality=rf"n \le m p = 128 \cdot 64 = {128 * 64}\ (N = n + 1 \le {128 * 64 + 1}\ \text{{tokens}})"
                   rf"\quad\text{{but}}\quad \text{{one-way CC, Bob}}"
                   rf"\to\text{{Alice}}(\mathrm{{INDEX}}_{{{n}}}) \le \lceil\log_2 {n}\rceil",
        notes=(f"max N from the budget library: {max_n} tokens, i.e. n = {max_n - 1} symbols and the index token"
               if max_n is not None else
               f"(the budget library has no length bound for {rid} yet; n ≤ m·p = {128 * 64} directly)"),
        reference="Theorem 3 and Theorem 1 of [BHBK24]; section 6 of [BHBK24] for m = 128, p = 64"))
    return Lesson("rnn-index", f"Recurrent models and index lookup: m·p ≥ n (n = {n})",
                  "Theorem 2 turns a recurrent model into a one-way protocol; INDEX_n needs n bits one-way; so index "
                  "lookup on n symbols (N = n + 1 tokens with the index) needs m·p ≥ n (Theorem 3, whose N is this "
                  "n). Run on real models, with the certificate a model below the bound cannot escape.", steps, n)


# ---- rnn-eq ---------------------------------------------------------------------------------------
def rnn_eq(n: int | None = None) -> Lesson:
    from commsim.theory.automaton import automaton_report, ineq
    from commsim.theory.fooling import cross, fooling_set
    n = _size(n, "rnn-eq")
    N = 2 * n
    rid = "eq-ineq"
    reduction, problem, model, simulator = engine(rid, "memorize", n)
    a, b = _instance(problem, 11 + n)
    b = a.copy() if n % 2 else b  # show an equal pair at odd n, a different one at even n
    encoded, result, answer, direct = run_one(reduction, problem, model, simulator, a, b)
    tokens = encoded.tokens[0]
    states = _states(model, tokens, N)
    steps = [Step(
        f"INEQ on {{0,1}}^{N}, split down the middle",
        "INEQ(x) = 1 iff the first half of x differs from the second. Give Alice the first half and Bob the "
        "second: computing INEQ is computing 1 − EQ(a, b). The split is contiguous, so the handoff applies.",
        instance=f"x = {_bits(a)} {_bits(b)} (a | b), INEQ(x) = {int(ineq(np.concatenate([a, b])[None])[0])}\n"
                 f"model: {model.spec} — {model.describe_state()}\nstates: "
                 + ", ".join(f"h_{t + 1} = {s}" for t, s in enumerate(states)),
        holdings={"alice": f"a = x_1..x_{n} = {_bits(a)}", "bob": f"b = x_{n + 1}..x_{N} = {_bits(b)}"},
        reference="Theorem 11 of [BHBK24]")]
    steps.append(Step(
        "Proof 1, Theorem 2: the handoff gives a one-way EQ protocol",
        f"Alice runs the model over a and sends h_{n}; Bob resumes over b and reads INEQ at the last position. "
        f"Bob's answer to EQ is 1 − INEQ.",
        instance=f"protocol's EQ answer: {answer}; direct forward: {direct}; EQ(a, b) = {int(problem.evaluate(a, b))}",
        holdings={"alice": f"a = {_bits(a)}", "bob": f"b = {_bits(b)}, then h_{n}"},
        messages=messages_of(result.transcript),
        inequality=rf"\text{{bits}} = m p = {result.transcript.total_bits}",
        reference="Theorem 2 and Theorem 11 (proof 1) of [BHBK24]"))
    fs = fooling_set("eq", n)
    ver = fs.verify()
    c = cross(fs, 1, 2)
    x1, x2 = fs.member(1)[0], fs.member(2)[0]
    steps.append(Step(
        f"EQ_{n} needs {n} bits, even two-way",
        "The pairs (x, x) form a fooling set: each has EQ = 1, and crossing two of them gives an unequal pair. By "
        "the rectangle property no two may share a transcript.",
        instance=f"members ({_bits(x1)}, {_bits(x1)}) and ({_bits(x2)}, {_bits(x2)}); crossings: "
                 + ", ".join(f"EQ({_bits(k.alice)}, {_bits(k.bob)}) = {k.value}" for k in c),
        inequality=rf"\mathrm{{CC}}(\mathrm{{EQ}}_{{{n}}}) \ge \log_2 |S| = {n} = N/2",
        notes=f"verified: {ver.ok} ({ver.method})",
        reference=f"{fs.source}; Fact 2 of [BHBK24]"))
    good = _run(rid, "memorize", n)
    steps.append(Step(
        "Theorem 11: m·p ≥ N/2, met with equality",
        "The handoff is a one-way EQ_(N/2) protocol of m·p bits, so m·p ≥ N/2. Storing the first half and "
        "comparing bit by bit needs exactly N/2 one-bit units.",
        instance=f"commsim run {rid} --model memorize --n {n}: {good.instances_run} instances ({good.instances}), bits used "
                 f"{good.bits_used}, bound {good.lower_bound.bits}, correct on all: {good.model_correct}, exact: "
                 f"{good.protocol_matches_model}",
        inequality=rf"m p = {good.bits_used} \ge N/2 = {n}",
        reference="Theorem 11 (proof 1) of [BHBK24]"))
    short_spec = f"memorize:capacity={n - 1}"
    short = _run(rid, short_spec, n)
    r2, p2, m2, w2 = engine(rid, short_spec, n)
    steps.append(_certificate_step(
        f"One bit short: {short_spec}", short, r2, p2, m2, w2, "Theorem 11 of [BHBK24]; pigeonhole",
        f"Accuracy over all instances: {short.model_accuracy:.4f}."))
    rep = automaton_report("ineq", N)
    dist = rep.distinguishable
    halves = problem.alice_inputs()
    reached_full = len({s.tobytes() for s in model.final_states(halves)})
    reached_short = len({s.tobytes() for s in m2.final_states(halves)})
    steps.append(Step(
        "Proof 2, Lemma 4: a recurrent model is a finite automaton",
        "Run on prefixes, a model with m·p state bits visits at most 2^(m·p) states, so it is a DFA with that many "
        "states. Count the states the two memorizing models actually reach after the first half:",
        instance=f"states reached after all {len(halves)} first halves: memorize (m·p = {model.state_bits}) reaches "
                 f"{reached_full}; {short_spec} (m·p = {m2.state_bits}) reaches {reached_short}",
        inequality=rf"\text{{states }} h_{{N/2}} \text{{ reached}} \le 2^{{m p}}:\quad {reached_full} \le 2^{{{model.state_bits}}},"
                   rf"\ {reached_short} \le 2^{{{m2.state_bits}}}",
        reference="Lemma 4 of [BHBK24]"))
    w1, w2_ = halves[1], halves[2]
    f11 = int(ineq(np.concatenate([w1, w1])[None])[0])
    f21 = int(ineq(np.concatenate([w2_, w1])[None])[0])
    steps.append(Step(
        f"Myhill–Nerode: INEQ on {{0,1}}^{N} needs 2^{n} states",
        "Two different first halves x1, x2 must lead to different states: the suffix x1 gives INEQ(x1 x1) = 0 but "
        "INEQ(x2 x1) = 1. So every DFA agreeing with INEQ has at least 2^(N/2) states, and 2^(m·p) ≥ 2^(N/2).",
        instance=f"x1 = {_bits(w1)}, x2 = {_bits(w2_)}, suffix x1: INEQ(x1 x1) = {f11}, INEQ(x2 x1) = {f21}\n"
                 f"commsim automaton ineq --n {N}: minimal DFA {rep.states} states ({rep.live_states} live; "
                 f"formula {rep.formula_states}); {dist.count} pairwise distinguishable prefixes of length {n} — "
                 f"{dist.method}",
        inequality=rf"2^{{m p}} \ge {dist.count} = 2^{{N/2}} \implies m p \ge {n}",
        notes=f"verified: {dist.verified}. The {short_spec} model reaches only {reached_short} < {dist.count} "
              f"states, so two first halves share one — the collision of the certificate above.",
        reference="Lemma 4 and Theorem 11 (proof 2) of [BHBK24]"))
    return Lesson("rnn-eq", f"Recurrent models and equality: m·p ≥ N/2 (N = {N})",
                  "Theorem 11 twice: by communication (the handoff is a one-way EQ protocol) and by automata "
                  "(Lemma 4: a recurrent model is a DFA, and INEQ needs 2^(N/2) states).", steps, n)


# ---- rnn-disj --------------------------------------------------------------------------------------
def rnn_disj(n: int | None = None) -> Lesson:
    from commsim.theory.fooling import cross, fooling_set
    from protocols.reductions.disj import key_vectors
    n = _size(n, "rnn-disj")
    rid = "disj-mqar"
    reduction, problem, model, simulator = engine(rid, "memorize", n)
    a, b = _instance(problem, 5 + n)
    encoded, result, answer, direct = run_one(reduction, problem, model, simulator, a, b)
    keys = key_vectors(n)
    tokens = encoded.tokens[0]
    labels = np.asarray(result.output[0]).reshape(-1)
    steps = [Step(
        "Multi-query associative recall (MQAR)",
        "The model sees n labelled keys (v_i, y_i), then queries; at each query it must output the label of the "
        "matching key. The keys are public: distinct corners of a hypercube, scaled to unit length.",
        instance="keys: " + "; ".join(f"v{i + 1} = ({', '.join(f'{x:+.3f}' for x in keys[i])})" for i in range(n))
                 + f"\nmodel input ({encoded.seq_len} tokens): {tokens_text(reduction, n, tokens)}",
        holdings={"alice": f"the labels y_i = a_i = {_bits(a)} (positions 1..{2 * n}: keys and labels)",
                  "bob": f"b = {_bits(b)} (never enters the model); the queries v1..v{n} (positions "
                         f"{2 * n + 1}..{3 * n})"},
        reference="Theorem 8 of [BHBK24] and its proof (MQAR as a special case of the nearest-neighbour task)")]
    steps[0].figures.append(mqar_drawing(tokens_text(reduction, n, tokens).split(), a, b))
    steps.append(Step(
        "From MQAR to DISJ through the handoff",
        "Alice runs the model over the labelled keys and sends the state. Bob feeds every key as a query, reads "
        "back all of a from the outputs, and answers DISJ(a, b) = 1 iff some i has a_i = b_i = 1.",
        instance=f"labels Bob reads at the {n} queries: {_bits(labels)} (= a: {np.array_equal(labels, a)}); "
                 f"DISJ answer {answer}, direct forward {direct}, true {int(problem.evaluate(a, b))}",
        holdings={"alice": f"a = {_bits(a)}", "bob": f"b = {_bits(b)}, then h_{2 * n}"},
        messages=messages_of(result.transcript),
        inequality=rf"\text{{bits}} = m p = {result.transcript.total_bits}",
        reference="Theorem 2 and Theorem 8 of [BHBK24]"))
    fs = fooling_set("disj", n)
    ver = fs.verify()
    c = cross(fs, 1, 2)
    steps.append(Step(
        f"DISJ_{n} needs {n} bits",
        "The pairs (x, complement of x) are disjoint; crossing two different ones gives intersecting sets in at "
        "least one direction. A fooling set of size 2^n.",
        instance=f"members #1 = ({_bits(fs.member(1)[0])}, {_bits(fs.member(1)[1])}), #2 = "
                 f"({_bits(fs.member(2)[0])}, {_bits(fs.member(2)[1])}); crossings: "
                 + ", ".join(f"DISJ({_bits(k.alice)}, {_bits(k.bob)}) = {k.value}" for k in c),
        inequality=rf"\mathrm{{CC}}(\mathrm{{DISJ}}_{{{n}}}) \ge {n}",
        notes=f"verified: {ver.ok} ({ver.method})",
        reference=f"{fs.source}; Fact 1 of [BHBK24]"))
    good = _run(rid, "memorize", n)
    steps.append(Step(
        "Theorem 8: m·p ≥ N/2",
        "A recurrent model doing MQAR over n labelled keys followed by n queries (N = 2n inputs) gives a one-way "
        "DISJ_n protocol of m·p bits. "
        "Storing the n labels meets this exactly.",
        instance=f"commsim run {rid} --model memorize --n {n}: {good.instances_run} instances ({good.instances}), bits used "
                 f"{good.bits_used}, bound {good.lower_bound.bits}, correct on all: {good.model_correct}, exact: "
                 f"{good.protocol_matches_model}",
        inequality=rf"m p = {good.bits_used} \ge N/2 = {n}",
        notes=f"In [BHBK24] (App. G.1) the N inputs are N/2 labelled keys (v_i, y_i), one input each, followed by "
              f"N/2 queries: N = 2n because of n keys plus n queries. This encoding spends two tokens on a labelled "
              f"key (v_i, then y_i), giving {good.seq_len} tokens in all; in the paper's N the bound is the same: "
              f"m ≥ N/(2p).",
        reference="Theorem 8 of [BHBK24] (nearest neighbour) and its proof in App. G.1 (MQAR)"))
    short_spec = f"memorize:capacity={n - 1}"
    short = _run(rid, short_spec, n)
    r2, p2, m2, w2 = engine(rid, short_spec, n)
    steps.append(_certificate_step(
        f"One bit short: {short_spec}", short, r2, p2, m2, w2, "Theorem 8 of [BHBK24]; pigeonhole",
        f"Accuracy over all instances: {short.model_accuracy:.4f}."))
    gru_spec = f"gru:width={max(1, (n - 1) // 2)},precision=2,seed=1"
    gru = _run(rid, gru_spec, n)
    r3, p3, m3, w3 = engine(rid, gru_spec, n)
    steps.append(_certificate_step(
        f"A GRU with m·p = {gru.bits_used} bits", gru, r3, p3, m3, w3, "Theorem 8 of [BHBK24]",
        "The gates do not help: the state is all Bob gets."))
    return Lesson("rnn-disj", f"Recurrent models and nearest-neighbour recall: m·p ≥ N/2 (n = {n})",
                  "Theorem 8: a recurrent model that answers many associative-recall queries lets Bob recover "
                  "Alice's whole set, so it solves DISJ one-way and needs m·p ≥ N/2.", steps, n)
