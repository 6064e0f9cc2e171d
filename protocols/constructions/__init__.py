"""The papers' constructions as runnable models (the upper-bound side of every separation).

Model kinds (``--model`` specs; every construction is built in binary fixed point and its default
precision is the narrowest in which it is exact):

``construct:idxl``   Theorem 1 of [BHBK24]: one attention layer, width O(log N), index lookup.
                     Keys: ``n=N`` (default: the task's), ``symbols=S``, ``gamma=G``, ``seed=S``,
                     ``precision=P[,frac=F]``.
``construct:match2`` [SHT23]: one attention layer of width 3 computing Match2 at every position.
                     Keys: ``modulus=M``, ``length=N``, ``precision=P[,frac=F]``.
``construct:eq2``    Theorem 6 of [BHBK24]: two attention layers, width O(log N), computing INEQ.
                     No one-layer protocol wraps it (Lemma 5): ``commsim run`` refuses it with the reason.
``construct:lookup`` a one-layer attention of width N + |alphabet| that reads the whole string at the
                     query position and decides a language (``language=dyck22``); ``width=W`` or a
                     small ``precision=P`` give the reduced variants, which must fail.

``construct:thres``  Theorem 13 of [BHBK24]: a threshold of k-sparse features in two layers (k heads), width
                     O(log N): ``h=eq|ineq|disj`` (n = N/2) or ``h=custom,length=N,sets=1+5/2+6,fn=and,b=0``.
``construct:nstnb``  Theorem 7 of [BHBK24]: nearest neighbour in two layers of width O(log N) over the
                     hypercube-corner codebook (``length=L``, ``dim=D``); reads the ``disj-mqar`` tokens too.
``construct:qsa``    [SHT23]: q-sparse averaging in one attention layer (``q=``, ``length=N``,
                     ``layout=disj|generic``, ``keys=lemma2|rip``); with ``disj-qsa`` the attention protocol
                     simulates it.
``construct:match3-third-order`` [SHT23]'s claim with commsim's weights: Match3 at every position in one
                     third-order attention unit (the three-angle Match2 trick, position-code penalties for
                     the degenerate pairs): ``modulus=M``, ``length=N``, ``codes=auto|onehot|lemma2``,
                     ``precision=P[,frac=F]``; no one-layer protocol wraps it.
``construct:match3-variant1`` Match3's Variant 1 (z_N = 0, the N-th output) in two layers of one head, m = 3
                     (``modulus=M``, ``length=N``; commsim's weights): reads ``disj-match3``'s tokens.
``construct:match3-bigram`` Match3Bigram (some j with z_i + z_j + z_(j+1) = 0) in two layers of width 2 and 3
                     (``modulus=M``, ``length=N``; commsim's weights).
``construct:match3-local`` Match3Local (some j1, j2 within distance K of i with z_i + z_j1 + z_j2 = 0) at every
                     position in one attention layer: qSA over the window (q = 2K + 1) and an MLP on the residue
                     histogram (``modulus=M``, ``length=N``, ``window=K``, ``codes=auto|onehot|lemma2``;
                     commsim's weights).
``construct:3cycle-pair`` commsim's higher-order graph unit (attention over pairs (j, k) whose logit reads
                     X_ij, X_jk, X_ki) deciding Directed 3-Cycle at every node, width 1, 8 bits
                     (``nodes=N``, default the task's); no node-partition protocol wraps it.

Their separations (``commsim separate TASK``: ``idxl``, ``dyck22``, ``eq``, ``nstnb``, ``disj``, ``qsa``,
``two-layers``) are :mod:`protocols.separations`.
"""
from __future__ import annotations

from commsim.contract import MAX_SEQUENCE_LENGTH
from protocols.constructions.common import ConstructionError, require_fixed
from protocols.constructions.orthogonal import DEFAULT_GAMMA

__all__ = ["register"]


def _gamma(spec) -> float:
    """The spec's gamma (the vectors' largest |inner product|), in (0, 1)."""
    gamma = spec.float("gamma", DEFAULT_GAMMA)
    if not 0 < gamma < 1:
        raise ConstructionError(f"model spec {spec.text!r}: gamma must be in (0, 1), got {gamma}", "model")
    return gamma


def make_idxl(spec, n=None, vocab_size=None, reduction=None, **context):
    """Theorem 1 of [BHBK24]: index lookup in one attention layer of width O(log N) (keys n, symbols, gamma, seed, precision)."""
    from protocols.constructions.idxl import build_idxl
    symbols = spec.int("symbols", 2, minimum=2)
    n = spec.int("n", n, minimum=1, maximum=MAX_SEQUENCE_LENGTH)
    if n is None:
        raise ConstructionError(f"model spec {spec.text!r}: give n=N (or use it with `commsim run index-idxl`)",
                                "model")
    if reduction is not None and reduction != "index-idxl":
        raise ConstructionError(f"construct:idxl reads the index-idxl encoding (symbols, then an index token); "
                                f"{reduction} encodes its task differently", "model")
    gamma, seed = _gamma(spec), spec.int("seed", 0, minimum=0)
    fmt = spec.format_if_given()
    return build_idxl(n, fmt=fmt, symbols=symbols, gamma=gamma, seed=seed, spec=spec.text)


def make_match2(spec, vocab_size=None, seq_len=None, **context):
    """[SHT23]: Match2 in one attention layer of width 3 (keys modulus=M, length=N, precision)."""
    from protocols.constructions.match2 import build_match2
    # with a task, its tokens are the residues 0..M-1 (the blank, token M, is the model's own)
    modulus = spec.int("modulus", 16 if vocab_size is None else max(int(vocab_size), 2), minimum=2)
    length = spec.int("length", 16 if seq_len is None else int(seq_len), minimum=1, maximum=MAX_SEQUENCE_LENGTH)
    return build_match2(length, modulus, fmt=spec.format_if_given(), spec=spec.text)


def make_eq2(spec, n=None, seq_len=None, reduction=None, **context):
    """Theorem 6 of [BHBK24]: INEQ/EQ in two attention layers of width O(log N) (keys n, gamma, seed, precision)."""
    from protocols.constructions.eq2 import build_eq2
    if reduction is not None and reduction != "eq-ineq":
        raise ConstructionError(f"construct:eq2 reads the eq-ineq encoding (x, then y); {reduction} encodes its task "
                                f"differently", "model")
    half = spec.int("n", n, minimum=1, maximum=MAX_SEQUENCE_LENGTH)
    if half is None:
        half = None if seq_len is None else int(seq_len) // 2
    if half is None:
        raise ConstructionError(f"model spec {spec.text!r}: give n=N/2 (or use it with `commsim run eq-ineq`)",
                                "model")
    gamma, seed = _gamma(spec), spec.int("seed", 0, minimum=0)
    fmt = spec.format_if_given()
    if fmt is not None:
        require_fixed(fmt, "construct:eq2")
    return build_eq2(half, fmt=fmt, gamma=gamma, seed=seed, spec=spec.text)


def make_lookup(spec, seq_len=None, vocab_size=None, **context):
    """A one-layer attention reading the whole string at the query (width N + |alphabet|); decides a language (keys language, length, width, precision)."""
    from protocols.constructions.lookup import build_lookup, parse_language
    language = parse_language(spec.str("language", "dyck22"))
    length = spec.int("length", seq_len, minimum=1, maximum=MAX_SEQUENCE_LENGTH)
    if length is None:
        raise ConstructionError(f"model spec {spec.text!r}: give length=N (or use it with `commsim run "
                                f"dyck22-fooling`)", "model")
    width = spec.int("width", None, minimum=1)
    return build_lookup(length, language, width=width, fmt=spec.format_if_given(), spec=spec.text)


def make_thres(spec, n=None, seq_len=None, reduction=None, **context):
    """Theorem 13 of [BHBK24]: a threshold of k-sparse features in two layers (keys h, n, length, sets, fn, b, gamma, seed, precision)."""
    from protocols.constructions.thres import ThresholdFunction, build_thres, named_threshold, parse_sets
    name = spec.str("h", "ineq" if reduction == "eq-ineq" else "disj", choices=("eq", "ineq", "disj", "custom"))
    if name == "custom":
        length = spec.int("length", seq_len, minimum=1, maximum=MAX_SEQUENCE_LENGTH)
        if length is None:
            raise ConstructionError(f"model spec {spec.text!r}: give length=N for h=custom", "model")
        sets = parse_sets(spec.str("sets", "1"), length)
        fns = spec.str("fn", "and").split("/")
        if len(fns) not in (1, len(sets)):
            raise ConstructionError(f"model spec {spec.text!r}: give one fn, or one per set ({len(sets)})", "model")
        h = ThresholdFunction(length, sets, fns * len(sets) if len(fns) == 1 else fns, spec.int("b", 0), "custom")
    else:
        half = spec.int("n", n if n is not None else (None if seq_len is None else int(seq_len) // 2), minimum=1,
                        maximum=MAX_SEQUENCE_LENGTH)
        if half is None:
            raise ConstructionError(f"model spec {spec.text!r}: give n=N/2 for h={name}", "model")
        h = named_threshold(name, half)
    fmt = spec.format_if_given()
    if fmt is not None:
        require_fixed(fmt, "construct:thres")
    return build_thres(h, gamma=_gamma(spec), seed=spec.int("seed", 0, minimum=0), fmt=fmt, spec=spec.text)


def make_nstnb(spec, n=None, seq_len=None, reduction=None, **context):
    """Theorem 7 of [BHBK24]: nearest neighbour in two layers of width O(log N) (keys length, dim, gamma, seed, precision)."""
    from commsim.theory.bounds import ceil_log2
    from protocols.constructions.nstnb import MAX_DIM, build_nstnb
    length = spec.int("length", seq_len, minimum=1, maximum=MAX_SEQUENCE_LENGTH)
    if length is None:
        raise ConstructionError(f"model spec {spec.text!r}: give length=L (or use it with `commsim run disj-mqar`)",
                                "model")
    default_dim = max(1, ceil_log2(n)) if reduction == "disj-mqar" and n else ceil_log2(max(length, 2)) + 2
    dim = spec.int("dim", min(default_dim, MAX_DIM), minimum=1, maximum=MAX_DIM)
    fmt = spec.format_if_given()
    if fmt is not None:
        require_fixed(fmt, "construct:nstnb")
    return build_nstnb(length, dim, gamma=_gamma(spec), seed=spec.int("seed", 0, minimum=0), fmt=fmt, spec=spec.text)


def make_qsa(spec, n=None, seq_len=None, reduction=None, **context):
    """[SHT23]: q-sparse averaging in one attention layer (keys q, length, layout, seed, precision)."""
    from protocols.constructions.qsa import KEYS, LAYOUTS, MAX_Q, build_qsa
    if reduction not in (None, "disj-qsa"):
        raise ConstructionError(f"construct:qsa reads the disj-qsa tokens (or its own generic layout); {reduction} "
                                f"encodes its task differently", "model")
    layout = spec.str("layout", "disj" if reduction == "disj-qsa" else "generic", choices=LAYOUTS)
    q = spec.int("q", n if layout == "disj" and n is not None else 1, minimum=1, maximum=MAX_Q)
    length = spec.int("length", seq_len if seq_len is not None else 2 * q + 1, minimum=2, maximum=MAX_SEQUENCE_LENGTH)
    fmt = spec.format_if_given()
    if fmt is not None:
        require_fixed(fmt, "construct:qsa")
    return build_qsa(length, q, layout=layout, seed=spec.int("seed", 0, minimum=0), fmt=fmt,
                     keys=spec.str("keys", "lemma2", choices=KEYS), spec=spec.text)


def make_match3_third_order(spec, vocab_size=None, seq_len=None, **context):
    """[SHT23]: Match3 in one third-order attention unit (keys modulus=M, length=N, codes, seed, precision)."""
    from protocols.constructions.match3 import build_match3_third_order
    modulus = spec.int("modulus", 7 if vocab_size is None else max(int(vocab_size), 2), minimum=2, maximum=4096)
    length = spec.int("length", 5 if seq_len is None else int(seq_len), minimum=1, maximum=512)
    codes = spec.str("codes", "auto", ("auto", "onehot", "lemma2"))
    return build_match3_third_order(length, modulus, codes=codes, seed=spec.int("seed", 0, minimum=0),
                                    fmt=spec.format_if_given(), spec=spec.text)


def make_match3_variant1(spec, vocab_size=None, seq_len=None, **context):
    """[SHT23]: Match3's Variant 1 in two layers of one head, m = 3 (keys modulus=M, length=N)."""
    from protocols.constructions.match3_variant1 import build_match3_variant1
    modulus = spec.int("modulus", 7 if vocab_size is None else max(int(vocab_size), 2), minimum=2, maximum=4096)
    length = spec.int("length", 5 if seq_len is None else int(seq_len), minimum=2, maximum=MAX_SEQUENCE_LENGTH)
    return build_match3_variant1(length, modulus, spec=spec.text)


def make_match3_bigram(spec, vocab_size=None, seq_len=None, **context):
    """[SHT23]: Match3Bigram in two layers of width 2 and 3 (keys modulus=M, length=N)."""
    from protocols.constructions.match3_bigram import build_match3_bigram
    modulus = spec.int("modulus", 7 if vocab_size is None else max(int(vocab_size), 2), minimum=2, maximum=256)
    length = spec.int("length", 5 if seq_len is None else int(seq_len), minimum=2, maximum=MAX_SEQUENCE_LENGTH)
    return build_match3_bigram(length, modulus, spec=spec.text)


def make_match3_local(spec, vocab_size=None, seq_len=None, **context):
    """[SHT23]: Match3Local in one attention layer by qSA over the window (keys modulus=M, length=N, window=K,
    codes, seed)."""
    from protocols.constructions.match3_local import CODES, build_match3_local
    modulus = spec.int("modulus", 7 if vocab_size is None else max(int(vocab_size), 2), minimum=2, maximum=256)
    length = spec.int("length", 8 if seq_len is None else int(seq_len), minimum=1, maximum=1024)
    window = spec.int("window", 1, minimum=0, maximum=16)
    return build_match3_local(length, modulus, window, codes=spec.str("codes", "auto", CODES),
                              seed=spec.int("seed", 0, minimum=0), spec=spec.text)


def make_cycle3_pair(spec, seq_len=None, **context):
    """commsim's higher-order graph unit deciding Directed 3-Cycle (keys nodes, precision)."""
    from protocols.constructions.cycle3 import build_cycle3_pair
    from protocols.theorems import graph_nodes
    nodes = spec.int("nodes", None if seq_len is None else graph_nodes(seq_len), minimum=1, maximum=1024)
    if nodes is None:
        raise ConstructionError(f"model spec {spec.text!r}: give nodes=N (or use it with `commsim run disj-3cycle`)",
                                "model")
    return build_cycle3_pair(nodes, fmt=spec.format_if_given(), spec=spec.text)


def register(registry) -> None:
    """The construction model kinds (the separations register themselves: protocols.separations)."""
    registry.register("model", "construct:idxl", make_idxl,
                      "Theorem 1 of [BHBK24]: index lookup, one attention layer of width O(log N) "
                      "(n=, symbols=, gamma=, seed=, precision=)")
    registry.register("model", "construct:match2", make_match2,
                      "[SHT23]: Match2 at every position, one attention layer of width 3 "
                      "(modulus=M, length=N, precision=)")
    registry.register("model", "construct:eq2", make_eq2,
                      "Theorem 6 of [BHBK24]: INEQ in two attention layers of width O(log N) "
                      "(n=, gamma=, seed=, precision=); no one-layer protocol applies")
    registry.register("model", "construct:lookup", make_lookup,
                      "one attention layer of width N + |alphabet| reading the whole string; decides a language "
                      "(language=dyck22, length=, width=W reduced, precision=)")
    registry.register("model", "construct:thres", make_thres,
                      "Theorem 13 of [BHBK24]: a threshold of k-sparse features in two layers, width O(log N) "
                      "(h=eq|ineq|disj|custom, n=, length=, sets=1+5/2+6, fn=, b=, gamma=, seed=, precision=)")
    registry.register("model", "construct:nstnb", make_nstnb,
                      "Theorem 7 of [BHBK24]: nearest neighbour in two layers of width O(log N) "
                      "(length=, dim=D codebook, gamma=, seed=, precision=)")
    registry.register("model", "construct:qsa", make_qsa,
                      "[SHT23]: q-sparse averaging in one attention layer, m = O(q^2 log N) with keys=lemma2 "
                      "(explicit), O(q log N) with keys=rip (sign keys searched and verified on every q-set) "
                      "(q=, length=, layout=disj|generic, keys=lemma2|rip, seed=, precision=)")
    registry.register("model", "construct:3cycle-pair", make_cycle3_pair,
                      "commsim's higher-order graph unit: Directed 3-Cycle at every node, width 1, 8 bits "
                      "(nodes=N, precision=); no node-partition protocol applies")
    registry.register("model", "construct:match3-third-order", make_match3_third_order,
                      "[SHT23]: Match3 at every position in one third-order attention unit (three-angle Match2 "
                      "trick; modulus=M, length=N, codes=auto|onehot|lemma2, precision=); no one-layer protocol applies")
    registry.register("model", "construct:match3-variant1", make_match3_variant1,
                      "[SHT23]: Match3's Variant 1 (z_N = 0, the N-th output) in two layers of one head, m = 3 "
                      "(modulus=M, length=N); no one-layer protocol applies")
    registry.register("model", "construct:match3-local", make_match3_local,
                      "[SHT23]: Match3Local (|i - j1|, |i - j2| <= K) at every position in one attention layer: qSA "
                      "over the window (q = 2K + 1), then an MLP (modulus=M, length=N, window=K, "
                      "codes=auto|onehot|lemma2, seed=; commsim's weights)")
    registry.register("model", "construct:match3-bigram", make_match3_bigram,
                      "[SHT23]: Match3Bigram at every position in two layers of width 2 and 3 (modulus=M, length=N)")
