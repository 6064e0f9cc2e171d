"""Lesson ``compose``: function composition against one attention layer ([PNP24], Theorems 1 and 2)."""
from __future__ import annotations

import math

import numpy as np

from commsim import Lesson, Step
from protocols.lessons.common import engine, messages_of, run_one, tokens_text
from protocols.lessons.common import size_arg as _size
from protocols.lessons.drawings import compose_drawing
from protocols.theorems import (
    composition_cot_scale,
    composition_error_bound,
    composition_message_bits,
    composition_one_way_bits,
)

#: the layer the lesson runs: one head of width 1, 4-bit codes without fraction bits (hard attention)
LESSON_MODEL = "attention:heads=1,width=1,dim=2,precision=4,frac=0,classes={n},seed=0"
#: sampled instances for the measured error
INSTANCES = 2000
RID = "compose-index"


def _bound_text(bound: float) -> str:
    return f"{bound:.4f}" if bound > 0 else "0 (R <= 0: nothing is ruled out)"


def compose(n: int | None = None) -> Lesson:
    from commsim import run_reduction

    n = _size(n, "compose")
    spec = LESSON_MODEL.format(n=n)
    reduction, problem, model, simulator = engine(RID, spec, n)
    rng = np.random.default_rng(100 + n)
    g = rng.integers(0, n, n)
    bob = np.concatenate([rng.integers(0, n, n), [rng.integers(0, n)]])
    x, y = int(bob[n]), int(bob[int(bob[n])])
    encoded, result, answer, direct = run_one(reduction, problem, model, simulator, g, bob)
    t = result.transcript
    sent = t.bits_by_direction["alice_to_bob"]
    total = n * math.log2(n)
    one_way = composition_one_way_bits(n)
    theorem = composition_message_bits(model.heads, model.dim, model.precision)
    plan = simulator.exchange_plan(model, encoded)
    tok = encoded.tokens[0]
    steps = [Step(
        "The prompt",
        f"Two functions on domains of size n = {n} are written out one pair per token: g's n pairs first, then f's, "
        f"then the query a_x. The answer is g(f(x)). The layer reads its answer at the query position (label j means "
        f"c_j).",
        instance=f"{tokens_text(reduction, n, tok)}\nx = {x}, f(x) = b{y}, g(f(x)) = c{int(g[y])}",
        reference="[PNP24] (function composition); the layout is commsim's (docs: protocols/reductions/compose.py)",
        figures=[compose_drawing(tokens_text(reduction, n, tok).split(), n, x, y)]),
        Step(
        "Who holds what",
        "Alice holds g's description, Bob holds f's and the query position (he outputs). The query is known to "
        "both: it is a public position, so Alice computes each head's query vector q_N herself and nothing needs to "
        "travel from Bob: the protocol is one-way.",
        holdings={"alice": f"g = {g.tolist()} (positions 1..{n}) and the public query x = {x}",
                  "bob": f"f = {bob[:n].tolist()} (positions {n + 1}..{2 * n}) and the query a{x}? (position "
                         f"{2 * n + 1})"},
        instance=f"Alice holds {len(encoded.alice_positions)} of the {encoded.seq_len} positions; in this run she sends "
                 f"{sent} bits and Bob sends {t.bits_by_direction['bob_to_alice']}",
        reference="[PNP24], proof of Theorem 1"),
        Step(
        "Alice's message: her part of the softmax",
        f"Per head Alice sends her maximum logit M_A and her exact partial sums: the normaliser Z_A and the weighted "
        f"value sum U_A. The layer subtracts the global maximum before rounding each weight, so she sends the sums "
        f"for each of the K = {plan.candidates} maxima at which her rounded weights do not all vanish; Bob picks the "
        f"one for his maximum, adds his own terms, divides and reads the answer: the layer's own output, bit for bit. "
        f"[PNP24] count this message as H(d + 1)p bits.",
        messages=messages_of(t),
        instance=f"the protocol answers c{answer}; a direct forward of the layer answers c{direct}; the right "
                 f"answer is c{int(g[y])}",
        inequality=rf"C = {sent}\ \text{{bits sent}}\quad H(d+1)p = {model.heads}\cdot({model.dim}+1)\cdot"
                   rf"{model.precision} = {theorem}",
        reference="Theorem 4 of [BHBK24] (the partial-softmax exchange); [PNP24] (the count H(d + 1)p)")]
    report = run_reduction(RID, spec, n, instances=INSTANCES, seed=0)
    cert = report.certificate
    if cert is not None and cert.kind == "collision":
        witness = (f"found: g = {cert.alice_input} and g' = {cert.details['colliding_alice_input']} send the same "
                   f"{sent}-bit message; Bob's input (f = {cert.bob_input[:n]}, x = {cert.bob_input[n]}) separates "
                   f"them; the layer answers c{cert.model_output} where the answer is c{cert.expected} "
                   f"(verified by a direct forward: {cert.verified})")
    else:
        witness = report.certificate_search
    steps.append(Step(
        "Counting: a short message confuses two functions",
        "Bob knows y = f(x), and f may send x anywhere, so Bob may need any of g's n values: INDEX over an alphabet "
        "of size n. In a one-way protocol Bob's answer depends only on the message and his input, so the n^n "
        "functions g need n^n different messages: ceil(log2 n^n) bits. This deterministic count is commsim's "
        "corollary, not a statement of [PNP24], whose Theorem 1 is the error bound of the next step. " +
        (f"With {sent} bits there are 2^{sent} messages for {n}^{n} functions, so two functions collide, and a y "
         f"where they differ makes the layer wrong on one of them." if sent < one_way else
         f"This layer sends {sent} bits, enough for {n}^{n} different messages: the count forces no collision "
         f"(try a larger n)."),
        instance=witness,
        inequality=(rf"\lceil\log_2 {n}^{{{n}}}\rceil = {one_way} " + (">" if sent < one_way else r"\le") +
                    f" {sent} = C"),
        reference="commsim's own corollary (the counting behind [PNP24] Theorem 1, which states only "
                  "R = n log n - H(d + 1)p); the pigeonhole certificate"))
    me = report.measured_error
    R, bound = composition_error_bound(n, sent)
    R_paper, bound_paper = composition_error_bound(n, theorem)
    steps.append(Step(
        "How often it must be wrong (Theorem 1)",
        f"More than an input that fools the layer: [PNP24] Theorem 1 states that with R = n log n - H(d + 1)p > 0 the "
        f"layer answers wrong with probability at least R / (3 n log n) over uniformly random f, g and x; here "
        f"H(d + 1)p = {theorem}, so R = {R_paper:.3f} and the bound is {_bound_text(bound_paper)}. commsim's own "
        f"corollary puts in the C = {sent} bits this layer really sends (the counting needs only the length of a one-way "
        f"message): R = {R:.3f}, bound {_bound_text(bound)}. commsim measures the layer's error rate on random "
        f"instances, with a confidence interval, against the corollary's bound.",
        instance=f"measured over {me['trials']:,} random (f, g, x): {me['events']:,} wrong, rate {me['rate']:.4f}, "
                 f"{me['confidence']:.0%} {me['method']} interval [{me['low']:.4f}, {me['high']:.4f}]; "
                 f"{me['verdict']}",
        inequality=rf"\Pr[\text{{wrong}}] \ge \frac{{R}}{{3 n \log_2 n}}:\ {bound_paper:.4f}\ "
                   rf"(\text{{[PNP24]: }} R = {total:.3f} - {theorem}),\ {bound:.4f}\ "
                   rf"(\text{{commsim: }} R = {total:.3f} - {sent})",
        notes="A random layer is wrong far more often than the bound demands; the bound says that no layer of this "
              "size can do better than it, trained or not.",
        reference="Theorem 1 of [PNP24] (with H(d + 1)p); the C-bit form is commsim's own corollary"))
    steps.append(Step(
        "The direction matters",
        f"Two-way the task is easy: Bob sends y = f(x) in ceil(log2 n) = {math.ceil(math.log2(n))} bits and Alice "
        f"answers g(y). In one attention layer the keys and values at g's positions do not depend on f, and the query "
        f"is public, so Alice's part of the softmax is fixed without a word from Bob: one-way, where the bound bites.",
        inequality=rf"\underbrace{{2\lceil\log_2 {n}\rceil}}_{{\text{{two-way}}}} = {2 * math.ceil(math.log2(n))} "
                   rf"\ll \underbrace{{\lceil\log_2 {n}^{{{n}}}\rceil}}_{{\text{{one-way}}}} = {one_way}",
        reference="[PNP24]; compare INDEX two-way, Fact 3 of [BHBK24]"))
    scale = composition_cot_scale(n, model.heads, model.dim, model.precision)
    steps.append(Step(
        "Iterated composition and chain of thought (Theorem 2, stated only)",
        "Composing a function with itself many times, a layer that writes intermediate tokens (chain of thought) "
        "still needs Ω(√(n / (H d p))) generated steps. commsim does not implement it: the theorem gives no "
        "constant, so it bounds no concrete run, and the model of generated steps is not simulated here.",
        inequality=rf"(n / (H d p))^{{1/2}} = ({n} / ({model.heads}\cdot{model.dim}\cdot{model.precision}))^{{1/2}} = "
                   rf"{scale:.3f}",
        reference="Theorem 2 of [PNP24] (stated in the STAT 9910 slides)"))
    return Lesson("compose", "Function composition against one attention layer",
                  "Why one attention layer cannot compose two functions given in its prompt unless its heads carry "
                  "about n log n bits: the one-way message, the counting argument, and the error it forces.", steps, n)
