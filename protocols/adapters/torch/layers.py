"""Numpy forms of the small torch pieces an adapter needs: number formats from dtypes, and heads /
output maps (``f`` of Theorem 2, ``psi`` of Theorem 4 of [BHBK24]) built from ``nn.Linear`` and
pointwise layers.

Determinism.  A protocol run (batch 1), a batch run (large batches) and the direct forward
must give the same bits.  Every product here is the batch-independent
:class:`~commsim.contract.arithmetic.Dense` of the recurrent models, and elementwise numpy functions are
batch-independent.  A head that is not made of known layers runs through torch one row at a time
(same shapes every call, hence the same kernel and the same bits).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from commsim.contract import Dense, InputError, sigmoid
from commsim.core.precision import FormatError, NumberFormat, dtype_name, parse_format

#: documented agreement with the torch module's own forward: |commsim - torch| <= atol + rtol * |torch|
#: on the output values.  commsim computes every step in float64 and rounds the state (and the
#: output) to the format once per step; torch rounds every operation in its dtype, so the two differ
#: by a few units in the last place per step of the format.  Fixed point has no entry: such a model is a
#: different model from the module (reported, not judged: :func:`protocols.adapters.torch.trust.judge`).
#: fixed53.32 is the one fixed-point entry: the format commsim reads a graph module at to judge the reading
#: (:data:`protocols.adapters.torch.graph.READING_FORMAT`).  It rounds each weight and each operation down by less
#: than 2^-32 (2.3e-10), a thousand times below float32's unit in the last place (6e-8 relative), with 20 integer
#: bits (|value| < 5e5) that no probe or task state comes near; so |commsim - torch| is the float32 module's own
#: rounding, and float32's tolerance is the right one (a float64 module is held to it too: looser than its own
#: precision, still 500 times tighter than a misread empty neighbourhood, 9.5e-2).
TOLERANCE = {"float64": (1e-9, 1e-9), "float32": (2e-4, 2e-4), "float16": (5e-2, 5e-2),
             "bfloat16": (1.5e-1, 1e-1), "fixed53.32": (2e-4, 2e-4)}


class AdapterError(InputError):
    """A torch object cannot be wrapped as a commsim model (unsupported type, bad file, ...)."""

    def __init__(self, message: str, param: str | None = "model"):
        super().__init__(message, param)


def require_torch():
    """The torch module, or an :class:`AdapterError` saying how to install it."""
    try:
        import torch
    except ImportError:
        raise AdapterError("this model needs PyTorch, which is not installed: pip install 'commsim[torch]'") from None
    return torch


def format_for_dtype(dtype) -> NumberFormat:
    """float32 -> p = 32, bfloat16 -> 16, float64 -> 64, float16 -> 16 (IEEE semantics): the dtype read by
    :func:`commsim.core.precision.parse_format`, as ``dtype=`` is."""
    try:
        return parse_format(dtype=dtype)
    except FormatError:  # only the torch dtypes with an IEEE format of the same name and width have one
        raise AdapterError(f"parameters of dtype {dtype_name(dtype)} have no commsim number format; "
                           f"use float32, float64, bfloat16 or float16 (or override with precision=)") from None


def tensor(x) -> np.ndarray:
    """A torch tensor (or array) as a float64 numpy array (exact for every float dtype)."""
    if hasattr(x, "detach"):
        x = x.detach().to("cpu")
        if not x.is_floating_point() or x.dtype.itemsize < 4:  # bfloat16 / float16 have no numpy view
            import torch
            x = x.to(torch.float64)
        x = x.numpy()
    return np.array(x, dtype=np.float64)


def quantized_matrix(fmt, x, transpose: bool = False) -> np.ndarray:
    """A weight matrix (torch tensor or array; ``fmt`` None: as is) rounded to ``fmt`` as float64, transposed
    (contiguous) when asked -- in blocks of rows: a 50,257 x 768 head is 300 MB in float64, and rounding it
    whole would hold several such temporaries at once.  The same values as rounding it whole (elementwise)."""
    rows = int(x.shape[0])
    shape = tuple(int(s) for s in x.shape)
    out = np.empty(shape[::-1] if transpose else shape)
    step = max(1, (1 << 21) // max(1, int(np.prod(shape[1:], dtype=np.int64))))
    for s in range(0, rows, step):
        block = tensor(x[s:s + step])
        block = block if fmt is None else fmt.quantize(block)
        if transpose:
            out[:, s:s + step] = block.T
        else:
            out[s:s + step] = block
    return out


def embedding_weights(embedding, what: str, columns: int | None = None) -> np.ndarray:
    """The (rows, dim) weights of an ``nn.Embedding`` (fixed: no ``max_norm``) or of a given matrix,
    as float64; ``columns``: the dim its reader needs (checked when given)."""
    import torch.nn as nn
    dim = "dim" if columns is None else columns
    if isinstance(embedding, nn.Embedding):
        if embedding.max_norm is not None:
            raise AdapterError(f"the {what} is an nn.Embedding with max_norm, which renormalizes its weights during "
                               f"the forward; commsim needs fixed weights (use max_norm=None)")
        weight = tensor(embedding.weight)
    elif isinstance(embedding, nn.Module):
        raise AdapterError(f"the {what} must be an nn.Embedding or a (rows, {dim}) matrix, "
                           f"got {type(embedding).__name__}")
    else:
        weight = tensor(embedding)
    if weight.ndim != 2 or (columns is not None and weight.shape[1] != columns):
        raise AdapterError(f"the {what} has shape {tuple(weight.shape)}; it must be a (rows, {dim}) matrix")
    return weight


def _row_sum(x: np.ndarray) -> np.ndarray:
    """Sum along the last axis, term by term (batch-independent)."""
    out = np.zeros(x.shape[:-1])
    for j in range(x.shape[-1]):
        out += x[..., j]
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise (math.erf: batch-independent)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


class Head:
    """A map from vectors (batch, inputs) to output values (batch, outputs), numpy or torch-backed."""

    def __init__(self, steps: list, inputs: int, outputs: int, description: str):
        self.steps = steps
        self.inputs = int(inputs)
        self.outputs = int(outputs)
        self.description = description

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Apply the steps to a (batch, inputs) array."""
        y = np.array(x, dtype=np.float64)
        for step in self.steps:
            y = step(y)
        return y

    @property
    def probability(self) -> bool:
        """Is the head's one output a probability (its last step a sigmoid: decided at 1/2, not by sign)?"""
        return self.outputs == 1 and bool(self.steps) and self.steps[-1] is _sigmoid_copy

    def __repr__(self) -> str:
        return f"<Head {self.description}: {self.inputs} -> {self.outputs}>"


class Gelu:
    """GELU, exact (erf) or its tanh approximation, as a picklable numpy function."""

    def __init__(self, approximate: str = "none"):
        self.approximate = "tanh" if approximate == "tanh" else "none"

    def __call__(self, x):
        """GELU of ``x``, elementwise."""
        if self.approximate == "tanh":
            c = math.sqrt(2.0 / math.pi)
            return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x ** 3)))
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu(approximate: str) -> Gelu:
    """GELU, exact (erf) or its tanh approximation, as a numpy function."""
    return Gelu(approximate)


def _softmax(x):
    """Softmax over the last axis, summed term by term (batch-independent)."""
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / _row_sum(e)[..., None]


def _sigmoid_copy(x):
    """The logistic function of a copy of ``x`` (the input is left as it is)."""
    return sigmoid(np.array(x, dtype=np.float64))


class LayerNorm:
    """LayerNorm (``center``) or RMSNorm over the last axis as a picklable numpy function
    (plain arrays; batch-independent)."""

    def __init__(self, weight=None, bias=None, eps: float = 1e-5, center: bool = True):
        self.weight, self.bias, self.eps, self.center = weight, bias, float(eps), bool(center)

    def __call__(self, x):
        """Normalize the last axis, then scale and shift."""
        d = x.shape[-1]
        centred = x - (_row_sum(x) / d)[..., None] if self.center else x
        var = _row_sum(centred * centred) / d
        y = centred / np.sqrt(var + self.eps)[..., None]
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y


def layer_norm(weight=None, bias=None, eps: float = 1e-5, *, center: bool = True) -> LayerNorm:
    """LayerNorm (``center``) or RMSNorm over the last axis, as a numpy function (batch-independent)."""
    return LayerNorm(weight, bias, eps, center)


def identity(x):
    """The identity map (a picklable stand-in for ``lambda x: x``)."""
    return x


def _relu(x):
    """max(x, 0), elementwise."""
    return np.maximum(x, 0.0)


def _silu(x):
    """x * sigmoid(x), elementwise."""
    return x * _sigmoid_copy(x)


class LeakyRelu:
    """x for x >= 0, slope * x otherwise (picklable)."""

    def __init__(self, slope: float):
        self.slope = float(slope)

    def __call__(self, x):
        """Leaky ReLU of ``x``, elementwise."""
        return np.where(x >= 0, x, self.slope * x)


ACTIVATIONS = {   # module-level callables only: adapted models are pickled (``--audit`` spawns processes)
    "relu": _relu,
    "tanh": np.tanh,
    "sigmoid": _sigmoid_copy,
    "gelu": Gelu("none"),
    "gelu_new": Gelu("tanh"),
    "gelu_pytorch_tanh": Gelu("tanh"),
    "gelu_fast": Gelu("tanh"),
    "silu": _silu,
    "swish": _silu,
}


def activation(name: str):
    """The numpy function of an activation named as in Hugging Face / TransformerLens configs."""
    key = (name or "").lower()
    if key not in ACTIVATIONS:
        raise AdapterError(f"activation {name!r} is not supported; supported: {', '.join(sorted(ACTIVATIONS))}")
    return ACTIVATIONS[key]


def numpy_steps(module, fmt: NumberFormat | None = None) -> list | None:
    """Numpy steps for ``module`` when it is made of known pieces (Linear, pointwise activations,
    LayerNorm, RMSNorm -- torch's or any module that computes one: :mod:`.norms` --, Dropout/Identity,
    Sequential of those); None otherwise.  Weights are rounded to
    ``fmt`` when given (every parameter is a number of the format)."""
    import torch.nn as nn
    q = (lambda a: a) if fmt is None else (lambda a: fmt.quantize(a))
    if callable(getattr(module, "commsim_steps", None)):   # a module that says how it reads (.blocks)
        return module.commsim_steps(fmt)
    if isinstance(module, nn.Sequential):
        steps = []
        for child in module:
            sub = numpy_steps(child, fmt)
            if sub is None:
                return None
            steps += sub
        return steps
    if isinstance(module, nn.Linear):
        w = quantized_matrix(fmt, module.weight, transpose=True)
        b = None if module.bias is None else q(tensor(module.bias))
        return [Dense.for_format(w, b, fmt) if fmt is not None else Dense(w, b)]
    if isinstance(module, (nn.Identity, nn.Dropout, nn.Flatten)):
        return []
    if isinstance(module, nn.ReLU):
        return [_relu]
    if isinstance(module, nn.Tanh):
        return [np.tanh]
    if isinstance(module, nn.Sigmoid):
        return [_sigmoid_copy]
    if isinstance(module, nn.GELU):
        return [_gelu(module.approximate)]
    if isinstance(module, nn.LeakyReLU):
        return [LeakyRelu(module.negative_slope)]
    if isinstance(module, nn.Softmax) and module.dim in (-1, None):
        return [_softmax]
    if isinstance(module, nn.LayerNorm) and len(module.normalized_shape) == 1:
        w = None if module.weight is None else q(tensor(module.weight))
        b = None if module.bias is None else q(tensor(module.bias))
        return [layer_norm(w, b, float(module.eps))]
    if isinstance(module, nn.RMSNorm) and len(module.normalized_shape) == 1:
        w = None if module.weight is None else q(tensor(module.weight))
        return [layer_norm(w, None, rms_eps(module), center=False)]
    from protocols.adapters.torch.norms import probe_norm   # a norm of the user's own class, by what it computes
    found, _ = probe_norm(module)
    if found is None:
        return None
    return [layer_norm(q(found.weight), None if found.bias is None else q(found.bias), found.eps, center=found.center)]


def rms_eps(module) -> float:
    """An ``nn.RMSNorm``'s epsilon; ``eps=None`` is torch's machine epsilon of the module's dtype."""
    if module.eps is not None:
        return float(module.eps)
    import torch
    dtype = module.weight.dtype if module.weight is not None else torch.get_default_dtype()
    return float(torch.finfo(dtype).eps)


class TorchRows:
    """Run an arbitrary torch callable one row at a time (batch-independent), in ``dtype``; picklable
    when the callable is."""

    def __init__(self, module, dtype):
        self.module, self.dtype = module, dtype

    def __call__(self, x):
        """The module on each row alone, in ``dtype``; float64 results."""
        import torch
        out = []
        with torch.no_grad():
            for row in np.asarray(x, dtype=np.float64):
                t = torch.from_numpy(row[None, :].copy()).to(self.dtype)
                y = self.module(t)
                if isinstance(y, (tuple, list)):
                    y = y[0]
                out.append(tensor(y).reshape(-1))
        return np.stack(out) if out else np.zeros((0, 0))


def _torch_rows(module, dtype) -> TorchRows:
    """Run an arbitrary torch callable one row at a time (batch-independent), in ``dtype``."""
    return TorchRows(module, dtype)


def numpy_head(module, inputs: int, fmt: NumberFormat | None, dtype=None, name: str = "head") -> Head:
    """A :class:`Head` for a torch module (or None: the identity) taking vectors of ``inputs`` values."""
    if module is None:
        return Head([], inputs, inputs, "identity")
    steps = numpy_steps(module, fmt) if _is_module(module) else None
    if steps is None:
        if not callable(module):
            raise AdapterError(f"the {name} must be a torch module or a callable, got {type(module).__name__}")
        import torch
        steps = [_torch_rows(module, dtype or torch.float32)]
        description = f"{type(module).__name__} (torch, row by row)"
    else:
        description = type(module).__name__
    probe = np.zeros((1, inputs))
    try:   # a width mismatch, found before any run: the module itself on a row of that width, then the steps
        if _is_module(module):
            import torch
            with torch.no_grad():
                module(torch.zeros((1, inputs), dtype=dtype or next(module.parameters(), torch.zeros(())).dtype))
        for step in steps:
            probe = step(probe)
    except (IndexError, ValueError, RuntimeError) as exc:
        raise AdapterError(f"the {name} ({description}) cannot read the {inputs} values the layer gives it "
                           f"({type(exc).__name__}: {exc})", name.split()[-1]) from None
    return Head(steps, inputs, probe.shape[-1], description)


def _is_module(obj) -> bool:
    """Is the object a torch ``nn.Module`` (False without torch)?"""
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - torch is present whenever a head is built
        return False
    return isinstance(obj, nn.Module)


def unwrap(module):
    """The module a TransformerLens bridge component wraps (the module itself otherwise)."""
    seen = 0
    while getattr(module, "_original_component", None) is not None and seen < 8:
        module = module._original_component
        seen += 1
    return module


@functools.lru_cache(maxsize=256)
def _importable(module_name: str) -> bool:
    """Can a fresh process (``--audit`` spawns them) import this module by name?  Not so for a
    factory file loaded by path, whose module exists only in this process."""
    import importlib.machinery
    import sys
    top = (module_name or "").split(".")[0]
    if top in sys.builtin_module_names or top == "__main__":
        return top != "__main__"
    return importlib.machinery.PathFinder.find_spec(top, sys.path) is not None


def portable_pickle(obj) -> bytes:
    """``pickle.dumps(obj)``, raising ``pickle.PicklingError`` when it refers to a class or function
    that a spawned process could not import (:func:`_importable`)."""
    import io
    import pickle

    class _Portable(pickle.Pickler):
        def reducer_override(self, value):
            if isinstance(value, type) or callable(value) and hasattr(value, "__qualname__"):
                name = getattr(value, "__module__", None)
                if name and not _importable(name):
                    raise pickle.PicklingError(f"{name}.{value.__qualname__} cannot be imported by another process")
            return NotImplemented

    buffer = io.BytesIO()
    _Portable(buffer).dump(obj)
    return buffer.getvalue()


def without_unpicklable_forward(state: dict) -> dict:
    """A model's ``__dict__`` for pickling: its ``torch_forward`` (the torch module, kept only for the
    agreement check) is dropped when another process could not unpickle it (a module whose class is
    not importable, e.g. defined in a factory file loaded by path); everything the protocol computes
    with is plain arrays and module-level callables."""
    state = dict(state)
    if state.get("torch_forward") is not None:
        try:
            portable_pickle(state["torch_forward"])
        except Exception:  # noqa: BLE001 - any pickling failure: the reference forward stays behind
            state["torch_forward"] = None
    return state

