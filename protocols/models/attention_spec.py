"""The ``attention`` model spec: parse its keys and build the layer; registration."""
from __future__ import annotations

from pathlib import Path

from commsim.core.errors import InputError
from commsim.core.precision import FixedPoint
from protocols.models.attention import (
    PROBE_RULES,
    AttentionLayer,
    probe_layer,
    random_layer,
)


def _int_list(spec, key: str, text: str, n: int | None) -> list[int]:
    out = []
    for item in text.split("/"):
        item = item.strip()
        try:
            if item == "n" or item.startswith("n+") or item.startswith("n-"):
                if n is None:
                    raise InputError(f"model spec {spec.text!r}: {key}= uses n, but no problem size is known",
                                     "--model")
                out.append(n + (int(item[1:]) if len(item) > 1 else 0))
            else:
                out.append(int(item))
        except ValueError:
            raise InputError(f"model spec {spec.text!r}: {key}={text!r} is not a /-separated list of integers",
                             "--model") from None
    return out


def make_attention(spec, vocab_size: int | None = None, seq_len: int | None = None, n: int | None = None,
                   task: str | None = None, reduction: str | None = None, **_) -> AttentionLayer:
    """Model factory for ``attention[:probe][:key=value,...]`` (module docstring)."""
    target = spec.target
    if target not in ("", "probe"):
        raise InputError(f"model spec {spec.text!r}: unknown attention construction {target!r}; known: probe",
                         "--model")
    query = spec.int("query")
    attend_self = bool(spec.int("self", 1, minimum=0, maximum=1))
    if target == "probe":
        for key in ("heads", "width", "dim", "classes", "weights", "seed", "positions", "query", "self", "residual"):
            if spec.has(key):
                raise InputError(f"model spec {spec.text!r}: {key}= is fixed by the probe construction", "--model")
        fmt = spec.format(default=FixedPoint(2, 0))
        vocab = spec.int("vocab", vocab_size, minimum=1)
        if vocab is None or seq_len is None:
            raise InputError("attention:probe needs a task (vocabulary and sequence length): use it with "
                             "`commsim run`", "--model")
        at_text = spec.str("at")
        if at_text is None:
            raise InputError(f"model spec {spec.text!r}: probe needs at=POSITION[/POSITION...]", "--model")
        at = _int_list(spec, "at", at_text, n)
        accept, reject = spec.str("accept"), spec.str("reject")
        if (accept is None) == (reject is None):
            raise InputError(f"model spec {spec.text!r}: probe needs exactly one of accept=TOKENS or reject=TOKENS",
                             "--model")
        if accept is not None:
            accepted = _int_list(spec, "accept", accept, n)
        else:
            rejected = set(_int_list(spec, "reject", reject, n))
            accepted = [t for t in range(vocab) if t not in rejected]
        rule = spec.str("rule", "all", PROBE_RULES)
        return probe_layer(seq_len, vocab, at, accepted, rule, fmt, spec=spec.text)
    weights = spec.str("weights")
    heads = spec.int("heads", minimum=1)
    width = spec.int("width", minimum=1)
    dim = spec.int("dim", minimum=1)
    classes = spec.int("classes", minimum=1)
    vocab = spec.int("vocab", minimum=1)
    positions = spec.int("positions", minimum=1)
    if weights is not None:
        for key in ("seed", "residual"):
            if spec.has(key):
                raise InputError(f"model spec {spec.text!r}: {key}= does not apply to loaded weights", "--model")
        given = spec.has("precision") or spec.has("dtype")
        fmt = spec.format() if given else None
        model = AttentionLayer.load(Path(weights).expanduser(), fmt, spec=spec.text)
        for key, value, have in (("heads", heads, model.heads), ("width", width, model.width),
                                 ("dim", dim, model.dim), ("classes", classes, model.classes),
                                 ("vocab", vocab, model.vocab_size), ("positions", positions, model.max_positions)):
            if value is not None and value != have:
                raise InputError(f"model spec {spec.text!r}: {key}={value} but the weights have {have}", "--model")
        if query is not None:
            model.query = query
        if spec.has("self"):
            model.attend_self = attend_self
        return model
    fmt = spec.format(default=FixedPoint.with_bits(16))
    seed = spec.int("seed", 0)
    vocab = vocab if vocab is not None else (vocab_size or 4)
    positions = positions if positions is not None else (seq_len or 64)
    residual = bool(spec.int("residual", 0, minimum=0, maximum=1))
    return random_layer(fmt, vocab=vocab, positions=positions, heads=heads or 1, width=width or 4,
                        dim=dim or 8, classes=classes or 2, seed=seed, query=query, attend_self=attend_self,
                        residual=residual, spec=spec.text)


def register(registry) -> None:
    from protocols.simulators.attention_exchange import ATTENTION_EXCHANGE
    registry.register("model", "attention", make_attention,
                      "one-layer attention (heads=H,width=M,dim=d,precision=P|dtype=...,seed=S,residual=0|1,"
                      "weights=FILE.npz; "
                      "attention:probe,...)")
    registry.register("simulator", ATTENTION_EXCHANGE.name, ATTENTION_EXCHANGE,
                      "one-layer attention: max-logit / partial-softmax exchange (Theorem 4 of [BHBK24])")
