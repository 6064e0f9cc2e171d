"""The recurrent model specs (elman, lstm, gru, ssm, mamba, linear-attention, dfa:dyck22, memorize): parsing and
registration."""
from __future__ import annotations

from commsim.contract import MAX_SEQUENCE_LENGTH, ModelError, NotApplicable, check_memory
from protocols.models.dyck_automaton import DyckAutomaton
from protocols.models.linear_attention import DEFAULT_DECAY, LinearAttention
from protocols.models.mamba import SelectiveSSM
from protocols.models.memorize import Memorize
from protocols.models.trainable import _TRAINABLE, load_model
from protocols.models.ssm import DiagonalSSM


# ---- specs and registration ------------------------------------------------------------------------------
def _vocab_and_classes(spec, vocab_size) -> tuple[int, int, int | None]:
    """(vocab, classes, the task's vocabulary) from the spec and the context."""
    task_vocab = None if vocab_size is None else int(vocab_size)
    vocab = spec.int("vocab", task_vocab or 2, minimum=1)
    classes = spec.int("classes", 2, minimum=1)
    return vocab, classes, task_vocab


def _refuse_small_vocab(spec_text: str, vocab: int, task_vocab: int | None, context: dict) -> None:
    """Refuse a model that reads fewer tokens than the task uses (NotApplicable)."""
    if task_vocab is not None and vocab < task_vocab:
        task = context.get("reduction") or context.get("task") or "the task"
        raise NotApplicable(f"model {spec_text!r} reads {vocab} input tokens but {task} (n = {context.get('n')}) "
                            f"uses {task_vocab}: the model cannot take this task's input", "model")


def _trainable_factory(kind: str):
    """The model factory of ``elman``, ``lstm`` or ``gru``: random or loaded weights."""
    cls = _TRAINABLE[kind]

    def factory(spec, vocab_size=None, **context):
        """Build the model from its spec (random weights, or a weights file re-rounded when a format is given)."""
        weights = spec.file("weights")
        fmt = spec.format_if_given()
        activation = spec.str("activation", None, choices=("tanh", "relu")) if kind == "elman" else None
        if weights is not None:
            model = load_model(str(weights), fmt, spec.text)
            if model.kind != kind:               # an elman file under lstm: would run an Elman labelled lstm
                raise ModelError(f"model spec {spec.text!r}: weights= holds {model.kind} weights, not {kind} "
                                 f"(write {model.kind}:weights=...)", "model")
            for key, have in (("width", model.width), ("vocab", model.vocab_size), ("classes", model.num_classes)):
                want = spec.int(key)
                if want is not None and want != have:
                    raise ModelError(f"model spec {spec.text!r}: {key}={want} but the weights file has {have}",
                                     "model")
            if activation is not None and activation != model.activation:
                raise ModelError(f"model spec {spec.text!r}: activation={activation} but the weights file "
                                 f"has {model.activation}", "model")
            if spec.has("seed"):
                raise ModelError(f"model spec {spec.text!r}: seed= has no effect with weights=", "model")
            _refuse_small_vocab(spec.text, model.vocab_size, vocab_size, context)
            return model
        width = spec.int("width", 8, minimum=1, maximum=4096)
        seed = spec.int("seed", 0, minimum=0)
        vocab, classes, task_vocab = _vocab_and_classes(spec, vocab_size)
        _refuse_small_vocab(spec.text, vocab, task_vocab, context)
        gates = {"lstm": 4, "gru": 3}.get(kind, 1)
        # float64 weights: input (vocab x gates*m), recurrent (m x gates*m), readout (m x classes)
        check_memory(8 * (vocab * gates * width + width * gates * width + width * classes + gates * width),
                     "model", f"the {kind} weights of {spec.text!r} (width {width}, vocab {vocab}, classes {classes})")
        extra = {"activation": activation or "tanh"} if kind == "elman" else {}
        return cls.random(fmt or spec.format(), width, vocab, classes, seed, spec.text, **extra)

    factory.__doc__ = (f"{cls.__doc__.splitlines()[0]} Keys: width=M, precision=P[,frac=F] or dtype=, seed=S, "
                       + ("activation=tanh|relu, " if kind == "elman" else "")
                       + "weights=FILE.npz, vocab=V, classes=C.")
    return factory


def _flag(spec, key: str, default: bool) -> bool:
    """A true/false key."""
    return spec.str(key, "true" if default else "false", choices=("true", "false")) == "true"


def _ssm_factory(spec, vocab_size=None, **context):
    """A diagonal linear SSM (S4D/DSS style), h_t = A h_{t-1} + B x_t, y = Re(C h); complex=true: 2·d·p state bits,
    false: d·p.  Keys: width=d, complex=true|false, precision=P[,frac=F] or dtype=, seed=S, vocab=V, classes=C."""
    width = spec.int("width", 4, minimum=1, maximum=4096)
    complex_state = _flag(spec, "complex", True)
    seed = spec.int("seed", 0, minimum=0)
    vocab, classes, task_vocab = _vocab_and_classes(spec, vocab_size)
    _refuse_small_vocab(spec.text, vocab, task_vocab, context)
    parts = 2 if complex_state else 1   # float64 A, B, C (real and imaginary parts)
    check_memory(8 * parts * (width + vocab * width + width * classes) + 8 * classes, "model",
                 f"the ssm weights of {spec.text!r} (width {width}, vocab {vocab}, classes {classes})")
    return DiagonalSSM.random(width, spec.format(), vocab, classes, seed, complex_state, spec.text)


def _linear_attention_factory(spec, vocab_size=None, **context):
    """One causal linear-attention layer (linear transformer / RetNet): S_t = γ S_{t-1} + v_t k_tᵀ, o_t = S_t q_t;
    state d·d·p bits ((d·d + d)·p with normalize=true).  Keys: dim=d, decay=γ, normalize=true|false,
    feature=identity|elu, precision=P[,frac=F] or dtype=, seed=S, vocab=V, classes=C."""
    dim = spec.int("dim", 4, minimum=1, maximum=128)   # the state is d·d numbers per sequence: at most 16,384
    decay = spec.float("decay", DEFAULT_DECAY)
    if not 0.0 <= decay <= 1.0:
        raise ModelError(f"model spec {spec.text!r}: decay={decay} is not in [0, 1]", "model")
    normalize = _flag(spec, "normalize", False)
    feature = spec.str("feature", "elu" if normalize else "identity", choices=("identity", "elu"))
    seed = spec.int("seed", 0, minimum=0)
    vocab, classes, task_vocab = _vocab_and_classes(spec, vocab_size)
    _refuse_small_vocab(spec.text, vocab, task_vocab, context)
    check_memory(8 * (3 * vocab * dim + dim * classes + classes), "model",
                 f"the linear-attention weights of {spec.text!r} (dim {dim}, vocab {vocab}, classes {classes})")
    return LinearAttention.random(dim, spec.format(), vocab, classes, seed, decay, normalize, feature, spec.text)


def _mamba_factory(spec, vocab_size=None, **context):
    """A selective SSM (Mamba): input-dependent Δ, B, C; state per layer d_inner×d_state + the convolution window
    d_inner×(d_conv - 1) numbers.  Keys: d_model=D, d_state=N, d_conv=K, expand=E, dt_rank=R, layers=L,
    precision=P[,frac=F] or dtype=, seed=S, vocab=V, classes=C."""
    d_model = spec.int("d_model", 4, minimum=1, maximum=1024)
    d_state = spec.int("d_state", 4, minimum=1, maximum=256)
    d_conv = spec.int("d_conv", 4, minimum=1, maximum=16)
    expand = spec.int("expand", 2, minimum=1, maximum=8)
    dt_rank = spec.int("dt_rank", None, minimum=1, maximum=1024)
    layers = spec.int("layers", 1, minimum=1, maximum=64)
    seed = spec.int("seed", 0, minimum=0)
    vocab, classes, task_vocab = _vocab_and_classes(spec, vocab_size)
    _refuse_small_vocab(spec.text, vocab, task_vocab, context)
    e, r = expand * d_model, dt_rank or -(-d_model // 16)
    per_layer = d_model + 2 * d_model * e + e * (d_conv + 1) + e * (r + 2 * d_state) + r * e + e * (d_state + 2) \
        + e * d_model
    check_memory(8 * (vocab * d_model + layers * per_layer + d_model * (classes + 1)), "model",
                 f"the mamba weights of {spec.text!r} (d_model {d_model}, d_inner {e}, d_state {d_state}, "
                 f"{layers} layer(s))")
    return SelectiveSSM.random(d_model, d_state, d_conv, expand, layers, dt_rank, spec.format(), vocab, classes, seed,
                               spec.text)


def _dfa_factory(spec, vocab_size=None, **context):
    """The Dyck-(2,2) automaton as an RNN: 3 one-bit state units, 4 input tokens ( ) [ ]."""
    model = DyckAutomaton(spec.text)
    _refuse_small_vocab(spec.text, model.vocab_size, vocab_size, context)
    return model


def _memorize_factory(spec, vocab_size=None, n=None, reduction=None, memory_program=None, **context):
    """Stores the input bits the task needs, one bit per unit; capacity=K keeps only K of them.  The
    reduction hands its memory program over in the model context (``Reduction.model_context``)."""
    capacity = spec.int("capacity", None, minimum=1, maximum=MAX_SEQUENCE_LENGTH)
    if reduction is None or n is None:
        raise ModelError(f"model spec {spec.text!r}: memorize is built for a task; use it with `commsim run "
                         f"REDUCTION` (or build protocols.models.memorize.Memorize from a MemoryProgram)", "model")
    if memory_program is None:
        raise NotApplicable(f"memorize has no memory layout for {reduction}: its reduction does not say which "
                            f"input bits to store", "model")
    return Memorize(memory_program, capacity, vocab_size or 2, spec.text)


_DESCRIPTIONS = {
    "elman": "Elman RNN, tanh or ReLU (width=M, precision=P[,frac=F]|dtype=, seed=, activation=, weights=FILE.npz, "
             "vocab=, classes=)",
    "lstm": "LSTM; state (h, c) = 2m units (width=M, precision=P[,frac=F]|dtype=, seed=, weights=FILE.npz, vocab=, "
            "classes=)",
    "gru": "GRU (width=M, precision=P[,frac=F]|dtype=, seed=, weights=FILE.npz, vocab=, classes=)",
}


def register(registry) -> None:
    """The recurrent model kinds (their simulator registers itself: ``protocols.simulators``)."""
    for kind in _TRAINABLE:
        registry.register("model", kind, _trainable_factory(kind), _DESCRIPTIONS[kind])
    registry.register("model", "ssm", _ssm_factory,
                      "Diagonal linear SSM (S4D/DSS), real or complex; state d or 2d numbers (width=d, complex=true|"
                      "false, precision=P[,frac=F]|dtype=, seed=, vocab=, classes=)")
    registry.register("model", "linear-attention", _linear_attention_factory,
                      "Linear attention (linear transformer / RetNet) as a recurrence; state the d×d matrix S (dim=d, "
                      "decay=, normalize=true|false, feature=identity|elu, precision=P[,frac=F]|dtype=, seed=)")
    registry.register("model", "mamba", _mamba_factory,
                      "Selective SSM (Mamba): input-dependent Δ, B, C; state per layer d_inner×d_state + the "
                      "convolution window d_inner×(d_conv-1) (d_model=, d_state=, d_conv=, expand=, dt_rank=, layers=, "
                      "precision=P[,frac=F]|dtype=, seed=, vocab=, classes=)")
    registry.register("model", "dfa:dyck22", _dfa_factory,
                      "The Dyck-(2,2) automaton as an RNN: 3 one-bit state units (no keys)")
    registry.register("model", "memorize", _memorize_factory,
                      "Stores the input bits the task needs, one bit per unit (capacity=K keeps only K)")
