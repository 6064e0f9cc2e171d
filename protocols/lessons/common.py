"""Small helpers shared by the lessons."""
from __future__ import annotations

import re

import numpy as np

from commsim.contract import InputError


def bits_text(a) -> str:
    """A 0/1 array as a bit string."""
    return "".join(str(int(v)) for v in np.asarray(a).reshape(-1))


def size_text(topic: str) -> str:
    """``--n`` of a topic for its help: "--n = N, the sequence length: 3..12 (default 6)" (from its one entry,
    :data:`TOPICS`)."""
    from protocols.lessons import TOPICS
    if topic not in TOPICS:
        return ""
    t = TOPICS[topic]
    return (f"--n{' = ' + t.size + ':' if t.size else ''} {'even, ' if t.even else ''}{t.minimum}..{t.maximum} "
            f"(default {t.default})")


def size_arg(n: int | None, topic: str) -> int:
    """The lesson's instance size: ``n`` or the topic's default, checked against the range of its entry
    in :data:`protocols.lessons.TOPICS` (the range that runs in seconds)."""
    from protocols.lessons import TOPICS
    t = TOPICS[topic]
    n = t.default if n is None else int(n)
    if n < t.minimum or n > t.maximum or (t.even and n % 2):
        parity = "an even number " if t.even else ""
        what = f" (where it is {t.size})" if t.size else ""
        raise InputError(f"n must be {parity}in {t.minimum}..{t.maximum} for {topic}{what}, got {n}", "n")
    return n


def vector_text(values, digits: int = 5) -> str:
    """A vector of floats, ``digits`` significant digits each."""
    return "(" + ", ".join(f"{float(v):.{digits}g}" for v in np.asarray(values).reshape(-1)) + ")"


def codes_text(values) -> str:
    """A vector of integer codes."""
    return "(" + ", ".join(str(int(v)) for v in np.asarray(values).reshape(-1)) + ")"


def positions_text(pos) -> str:
    """0-based positions as the papers' 1-based set."""
    return "{" + ", ".join(str(int(p) + 1) for p in pos) + "}"


def reduction_default(rid: str) -> str:
    """The model spec ``commsim run REDUCTION`` uses when --model is not given."""
    from commsim import load_plugins
    return load_plugins().get("reduction", rid).default_model


def engine(reduction_id: str, spec: str, n: int):
    """(reduction, problem, model, simulator) exactly as ``commsim run`` builds them (:func:`commsim.prepare`)."""
    from commsim import prepare
    setup = prepare(reduction_id, spec, n)
    return setup.reduction, setup.problem, setup.model, setup.simulator


def setup_of(reduction, problem, model, simulator):
    """The engine's :class:`commsim.Prepared` for these pieces (its ``run_instance``, ``direct_answers``, ``plan``)."""
    from commsim import Prepared
    return Prepared(reduction, problem, model, simulator)


def run_one(reduction, problem, model, simulator, a, b):
    """One instance through the real runner: (encoded input, run result, answer, direct forward's answer)."""
    return setup_of(reduction, problem, model, simulator).run_instance(a, b)


def certificate_of(reduction, problem, model, simulator, seed: int = 0):
    """The engine's certificate search on these pieces (:func:`commsim.search_certificate`)."""
    from commsim import search_certificate
    return search_certificate(setup_of(reduction, problem, model, simulator), seed=seed)


def human_label(label: str) -> str:
    """A message label as a lesson shows it: heads counted from 1 like everything else in the lessons
    (``query/head 0`` -> ``query/head 1``); the transcript's own labels (and its JSON) keep the simulator's
    0-based head keys."""
    return re.sub(r"\bhead (\d+)", lambda m: f"head {int(m.group(1)) + 1}", label)


def messages_of(transcript) -> list[tuple[str, str, str]]:
    """A transcript's messages as (sender, label, bits) rows of a lesson step (heads counted from 1)."""
    return [(m.sender, human_label(m.label), str(m.bits)) for m in transcript.messages]


def tokens_text(reduction, n: int, tokens) -> str:
    """Token ids as the task's token names."""
    names = reduction.vocabulary(n)
    return " ".join(names[int(t)] for t in np.asarray(tokens).reshape(-1))


def value_text(y) -> str:
    """A scalar as a number, an array as a bit string."""
    return str(int(y)) if np.ndim(y) == 0 else bits_text(y)
