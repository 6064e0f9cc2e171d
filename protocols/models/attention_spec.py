"""The ``attention`` model kind: its spec keys, the layers they build (random, loaded, or the small
exact ``probe`` construction), registration.

Spec (``commsim run ... --model attention:...``)
------------------------------------------------
``attention[:probe][:key=value,...]`` with keys ``heads=H, width=M (m), dim=d, precision=P[,frac=F]``
or ``dtype=float16|bfloat16|float32|float64``, ``seed=S``, ``vocab=V``, ``classes=C``,
``positions=P`` (rows of the position table), ``weights=FILE.npz``, ``query=POS`` (0-based;
negative counts from the end), ``self=0|1`` (whether the query attends to its own position),
``residual=0|1`` (a random layer whose psi also reads the query's embedding x_N),
``division=once|per-weight`` (the softmax's division: ``once``, the default, rounds o = [U / Z] once;
``per-weight`` is Appendix D of [BHBK24], each weight a_i = [e_i / Z] rounded, then o = [sum [a_i v_i]];
:mod:`protocols.models.attention`; any layer, probe and loaded weights included), and the position scheme
inside the attention (:mod:`protocols.models.attention_positions`): ``rope=true[,rope_base=B]`` (rotary q and
k, base 10000 by default; an even width), ``alibi=true`` (the ALiBi paper's slope per head on the logits) and
``positions=0`` (NoPE: no position table, the causal mask only).
A random layer defaults to the task's vocabulary and sequence length.  ``attention:probe`` is a
small exact construction (see :func:`probe_layer`) with keys ``at=I/J/...`` (``n`` stands for
the source problem's size), ``accept=T/...`` or ``reject=T/...`` and ``rule=all|any|differ``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from commsim.contract import InputError, check_memory
from commsim.core.precision import FixedPoint, NumberFormat
from protocols.models.attention import DIVISIONS, AttentionLayer, random_layer
from protocols.models.attention_positions import alibi_slopes


PROBE_RULES = ("all", "any", "differ")


def probe_layer(seq_len: int, vocab: int, at: Sequence[int], accepted: Sequence[int], rule: str = "all",
                fmt: NumberFormat | None = None, spec: str = "") -> AttentionLayer:
    """An exact small layer that looks at fixed positions ``at`` and tests their tokens.

    With fixed point and F = 0 the attention is hard: the key is 1 at the probed positions and 0
    elsewhere, the query is 1, so exp(0 - 1) rounds down to 0 and the weights are 1 on the probed
    positions only.  A head whose value is 1 on an accepted token computes floor(count / k) = 1
    iff all k probed tokens are accepted.  ``rule``: ``all`` (class 1 iff every probed token is
    accepted; one head), ``any`` (iff some is; one head), ``differ`` (iff they are not all alike;
    two heads).  Width 1, dimension 3, default precision 2 bits — a deliberately tiny layer.
    """
    fmt = fmt or FixedPoint(2, 0)
    if not isinstance(fmt, FixedPoint) or fmt.frac != 0:
        raise InputError("probe layers are exact in fixed point with frac=0 (e.g. precision=2,frac=0)", "model")
    if rule not in PROBE_RULES:
        raise InputError(f"probe rule must be one of {', '.join(PROBE_RULES)}, got {rule!r}", "model")
    flags = np.zeros(seq_len)
    for a in at:
        pos = a if a >= 0 else seq_len + a
        if not 0 <= pos < seq_len:
            raise InputError(f"probe position {a} is outside a sequence of length {seq_len}", "model")
        flags[pos] = 1
    acc = np.zeros(vocab)
    for t in accepted:
        if not 0 <= t < vocab:
            raise InputError(f"probe token {t} is outside the vocabulary 0..{vocab - 1}", "model")
        acc[t] = 1
    tok = np.stack([np.ones(vocab), acc, np.zeros(vocab)], axis=1)        # [1, accepted(s), 0]
    pos = np.stack([np.zeros(seq_len), np.zeros(seq_len), flags], axis=1)  # [0, 0, probed(i)]
    heads = {"all": [[0, 1, 0]], "any": [[1, -1, 0]], "differ": [[0, 1, 0], [1, -1, 0]]}[rule]
    H = len(heads)
    W_Q = np.tile(np.array([[[1.0, 0, 0]]]), (H, 1, 1))
    W_K = np.tile(np.array([[[0, 0, 1.0]]]), (H, 1, 1))
    W_V = np.array(heads, dtype=np.float64)[:, None, :]
    W_O = np.eye(H)
    if rule == "all":        # o = 1 iff all accepted: logits (0, o)
        psi = [(np.array([[0.0], [1.0]]), np.zeros(2))]
    elif rule == "any":      # o' = 1 iff none accepted: logits (o', 1 - o')
        psi = [(np.array([[1.0], [-1.0]]), np.array([0.0, 1.0]))]
    else:                    # logits (o1 + o2, 1 - o1 - o2)
        psi = [(np.array([[1.0, 1.0], [-1.0, -1.0]]), np.array([0.0, 1.0]))]
    return AttentionLayer(fmt, tok, pos, W_Q, W_K, W_V, W_O, psi, spec=spec)


def _int_list(spec, key: str, text: str, n: int | None) -> list[int]:
    """A /-separated list of integers; ``n``, ``n+K``, ``n-K`` stand for the problem size plus K."""
    out = []
    for item in text.split("/"):
        item = item.strip()
        try:
            if item == "n" or item.startswith("n+") or item.startswith("n-"):
                if n is None:
                    raise InputError(f"model spec {spec.text!r}: {key}= uses n, but no problem size is known",
                                     "model")
                out.append(n + (int(item[1:]) if len(item) > 1 else 0))
            else:
                out.append(int(item))
        except ValueError:
            raise InputError(f"model spec {spec.text!r}: {key}={text!r} is not a /-separated list of integers",
                             "model") from None
    return out


def make_attention(spec, vocab_size: int | None = None, seq_len: int | None = None, n: int | None = None,
                   task: str | None = None, reduction: str | None = None, **_) -> AttentionLayer:
    """Model factory for ``attention[:probe][:key=value,...]`` (module docstring)."""
    target = spec.target
    if target not in ("", "probe"):
        raise InputError(f"model spec {spec.text!r}: unknown attention construction {target!r}; known: probe",
                         "model")
    model = _make(spec, target, vocab_size, seq_len, n)
    if spec.has("division"):
        model.division = spec.str("division", "once", DIVISIONS)
    flags = ("0", "1", "false", "true")
    rope, alibi = spec.str("rope", None, flags), spec.str("alibi", None, flags)
    if spec.has("rope_base") and rope not in ("1", "true"):
        raise InputError(f"model spec {spec.text!r}: rope_base= needs rope=true", "model")
    if rope is not None:   # rotary q/k (and its base) or none: one config change, validated together
        on = rope in ("1", "true")
        model.config = model.config.replace(rope=on, rope_base=spec.float("rope_base", 10000.0) if on else 10000.0)
    if alibi is not None:
        model.alibi = alibi_slopes(model.heads) if alibi in ("1", "true") else None
    return model


def _make(spec, target: str, vocab_size: int | None, seq_len: int | None, n: int | None) -> AttentionLayer:
    """The layer of the spec, before its division key."""
    query = spec.int("query")
    attend_self = bool(spec.int("self", 1, minimum=0, maximum=1))
    if target == "probe":
        for key in ("heads", "width", "dim", "classes", "weights", "seed", "positions", "query", "self", "residual"):
            if spec.has(key):
                raise InputError(f"model spec {spec.text!r}: {key}= is fixed by the probe construction", "model")
        fmt = spec.format(default=FixedPoint(2, 0))
        vocab = spec.int("vocab", vocab_size, minimum=1)
        if vocab is None or seq_len is None:
            raise InputError("attention:probe needs a task (vocabulary and sequence length): use it with "
                             "`commsim run`", "model")
        at_text = spec.str("at")
        if at_text is None:
            raise InputError(f"model spec {spec.text!r}: probe needs at=POSITION[/POSITION...]", "model")
        at = _int_list(spec, "at", at_text, n)
        accept, reject = spec.str("accept"), spec.str("reject")
        if (accept is None) == (reject is None):
            raise InputError(f"model spec {spec.text!r}: probe needs exactly one of accept=TOKENS or reject=TOKENS",
                             "model")
        if accept is not None:
            accepted = _int_list(spec, "accept", accept, n)
        else:
            rejected = set(_int_list(spec, "reject", reject, n))
            accepted = [t for t in range(vocab) if t not in rejected]
        rule = spec.str("rule", "all", PROBE_RULES)
        return probe_layer(seq_len, vocab, at, accepted, rule, fmt, spec=spec.text)
    weights = spec.file("weights")
    heads = spec.int("heads", minimum=1)
    width = spec.int("width", minimum=1)
    dim = spec.int("dim", minimum=1)
    classes = spec.int("classes", minimum=1)
    vocab = spec.int("vocab", minimum=1)
    positions = spec.int("positions", minimum=0)
    if weights is not None:
        for key in ("seed", "residual"):
            if spec.has(key):
                raise InputError(f"model spec {spec.text!r}: {key}= does not apply to loaded weights", "model")
        model = AttentionLayer.load(weights, spec.format_if_given(), spec=spec.text)
        for key, value, have in (("heads", heads, model.heads), ("width", width, model.width),
                                 ("dim", dim, model.dim), ("classes", classes, model.classes),
                                 ("vocab", vocab, model.vocab_size), ("positions", positions, model.max_positions)):
            if value is not None and value != have:
                raise InputError(f"model spec {spec.text!r}: {key}={value} but the weights have {have}", "model")
        if query is not None:
            model.query = query
        if spec.has("self"):
            model.attend_self = attend_self
        return model
    fmt = spec.format(default=FixedPoint.with_bits(16))
    seed = spec.int("seed", 0, minimum=0)
    vocab = vocab if vocab is not None else (vocab_size or 4)
    positions = positions if positions is not None else (seq_len or 64)   # 0: NoPE, no position table
    h, m, d = heads or 1, width or 4, dim or 8
    # float64 weights: token and position embeddings, per head W_Q, W_K, W_V (m x d) and the output map
    check_memory(8 * ((vocab + positions) * d + 3 * h * m * d + h * m * (classes or 2) + h * m * d),
                 "model", f"the attention layer {spec.text!r} (heads x width x dim = {h} x {m} x {d}, "
                          f"vocab {vocab}, positions {positions})")
    residual = bool(spec.int("residual", 0, minimum=0, maximum=1))
    return random_layer(fmt, vocab=vocab, positions=positions or None, heads=heads or 1, width=width or 4,
                        dim=dim or 8, classes=classes or 2, seed=seed, query=query, attend_self=attend_self,
                        residual=residual, spec=spec.text)


def register(registry) -> None:
    """The ``attention`` model kind (its simulator registers itself: ``protocols.simulators``) and the graph
    transformers' ``graph-attention`` (:mod:`protocols.models.graph_spec`) and ``third-order-attention``
    (:mod:`protocols.models.third_order_spec`)."""
    from protocols.models.fnn import register as register_fnn
    from protocols.models.graph_spec import register as register_graph
    from protocols.models.third_order_spec import register as register_third_order
    register_graph(registry)
    register_fnn(registry)   # the fully-connected network over the whole input (qsa-approx)
    register_third_order(registry)
    registry.register("model", "attention", make_attention,
                      "one-layer attention (heads=H,width=M,dim=d,precision=P|dtype=...,seed=S,residual=0|1,"
                      "division=once|per-weight (o = [U/Z] once, or each weight [e_i/Z] first: App. D),"
                      "rope=true[,rope_base=B],alibi=true,positions=0 (NoPE),"
                      "weights=FILE.npz; "
                      "attention:probe,...)")
