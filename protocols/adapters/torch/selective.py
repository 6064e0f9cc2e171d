"""Mamba written in PyTorch -- Hugging Face's ``MambaForCausalLM`` (its pure-PyTorch path) and ``mambapy``'s
``Mamba`` core -- as commsim's selective SSM (:class:`protocols.models.mamba.SelectiveSSM`): the weights
are read into the numpy recurrence, whose handed-off state is exactly what the model carries between tokens
(per layer the SSM state d_inner × d_state and the convolution window d_inner × (d_conv - 1)), at the
model's dtype (float32 -> p = 32) or ``precision=``/``dtype=``.  The model's own forward (its logits at every
position) is the reference of the agreement check (:mod:`.trust`).
"""
from __future__ import annotations

import numpy as np

from commsim.core.precision import NumberFormat
from protocols.adapters.torch.layers import (
    AdapterError,
    format_for_dtype,
    tensor,
    unwrap,
    without_unpicklable_forward,
)
from protocols.adapters.torch.trust import ModuleForward, TorchTrust
from protocols.models.mamba import SelectiveSSM


def is_mambapy(obj) -> bool:
    """Is ``obj`` a module of the ``mambapy`` package (e.g. its ``Mamba``)?"""
    return type(obj).__module__.split(".")[0] == "mambapy"


class TorchSelectiveSSM(TorchTrust, SelectiveSSM):
    """A Mamba read from torch, with its torch forward for the agreement check."""

    kind = "mamba"

    def __init__(self, *args, torch_forward=None, source: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.torch_forward = torch_forward
        self.source = source

    def __getstate__(self):
        """Plain arrays; the torch forward stays behind when another process could not unpickle it."""
        return without_unpicklable_forward(self.__dict__)


def _linear(module):
    """An nn.Linear as (W (inputs, outputs), b or None), float64."""
    module = unwrap(module)
    return tensor(module.weight).T, None if module.bias is None else tensor(module.bias)


def _mixer_arrays(mixer, norm_weight) -> dict:
    """One Mamba mixer's arrays (the names of :data:`protocols.models.mamba.LAYER_KEYS`); HF's MambaMixer and
    mambapy's MambaBlock use the same parameter names."""
    in_w, in_b = _linear(mixer.in_proj)
    x_w, x_b = _linear(mixer.x_proj)
    dt_w, dt_b = _linear(mixer.dt_proj)
    out_w, out_b = _linear(mixer.out_proj)
    if x_b is not None:
        raise AdapterError("this Mamba's x_proj has a bias, which Mamba's does not: not a Mamba mixer")
    conv = unwrap(mixer.conv1d)
    weight = tensor(conv.weight)                   # (E, 1, K): depthwise
    if weight.ndim != 3 or weight.shape[1] != 1 or conv.groups != weight.shape[0]:
        raise AdapterError(f"this Mamba's conv1d is not depthwise (weight {tuple(weight.shape)}, groups {conv.groups})")
    return {"norm": norm_weight, "in_w": in_w, "in_b": in_b, "conv_w": weight[:, 0, :],
            "conv_b": None if conv.bias is None else tensor(conv.bias), "x_w": x_w, "dt_w": dt_w, "dt_b": dt_b,
            "A_log": tensor(mixer.A_log), "D": tensor(mixer.D), "out_w": out_w, "out_b": out_b}


def _norm(norm) -> tuple[np.ndarray | None, float]:
    """An RMSNorm's (weight or None, eps)."""
    weight = getattr(norm, "weight", None)
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    return None if weight is None else tensor(weight), float(eps)


def _dtype(module):
    return next(module.parameters()).dtype


def _check_vocab(rows: int, vocab_size: int | None, what: str) -> None:
    if vocab_size is not None and rows < vocab_size:
        raise AdapterError(f"{what} embeds {rows} tokens but the task uses {vocab_size}")


def wrap_hf_mamba(model, fmt: NumberFormat | None = None, *, vocab_size: int | None = None, spec: str = "",
                  **_) -> TorchSelectiveSSM:
    """A Hugging Face ``MambaForCausalLM`` (any number of layers) as a selective SSM."""
    model = unwrap(model)
    cfg = model.config
    if getattr(cfg, "hidden_act", "silu") != "silu":
        raise AdapterError(f"this Mamba's activation is {cfg.hidden_act!r}; commsim's Mamba computes SiLU")
    body = unwrap(model.backbone)
    layers = []
    eps = None
    for block in body.layers:
        block = unwrap(block)
        weight, eps = _norm(block.norm)
        layers.append(_mixer_arrays(unwrap(block.mixer), weight))
    norm_f, eps_f = _norm(body.norm_f)
    head_w, head_b = _linear(model.lm_head)
    embed = tensor(unwrap(body.embeddings).weight)
    _check_vocab(embed.shape[0], vocab_size, "this MambaForCausalLM")
    dtype = _dtype(model)
    fmt = format_for_dtype(dtype) if fmt is None else fmt
    return TorchSelectiveSSM(embed, layers, norm_f, head_w, head_b, fmt, eps=eps, eps_f=eps_f,
                             spec=spec or "hf-mamba", torch_forward=ModuleForward(model),
                             source=f"MambaForCausalLM ({len(layers)} layers, d_model {cfg.hidden_size}, "
                                    f"d_state {cfg.state_size}, d_conv {cfg.conv_kernel})")


class MambaPartsForward:
    """tokens -> head(Mamba(embedding(tokens))) in torch (every position), float64: the given parts composed,
    not a module of the user's (not judged unless a ``module`` reference is given: :mod:`.trust`)."""

    whole_model = False
    reference = "the given parts composed in torch (embedding -> Mamba -> head)"

    def __init__(self, embedding, core, head):
        self.embedding, self.core, self.head = embedding, core, head

    def __call__(self, tokens):
        import torch
        with torch.no_grad():
            t = torch.as_tensor(np.atleast_2d(np.asarray(tokens)), dtype=torch.long)
            return tensor(self.head(self.core(self.embedding(t))))


def _mambapy_head(head):
    """A head after a mambapy Mamba core: an nn.Linear, or an nn.Sequential of an RMSNorm and an nn.Linear (the
    final norm and the unembedding).  Returns (norm weight or None, eps, W, b)."""
    import torch.nn as nn
    if isinstance(head, nn.Sequential) and len(head) == 2 and type(head[0]).__name__ == "RMSNorm" \
            and isinstance(head[1], nn.Linear):
        weight, eps = _norm(head[0])
        if weight is None:
            raise AdapterError("the head's RMSNorm has no weight (mambapy's muP form); commsim reads a weighted one")
        return (weight, eps, *_linear(head[1]))
    if isinstance(head, nn.Linear):
        return (None, 0.0, *_linear(head))
    raise AdapterError(f"a mambapy Mamba core needs head= an nn.Linear or nn.Sequential(RMSNorm, nn.Linear); got "
                       f"{type(head).__name__}")


def wrap_mambapy(core, fmt: NumberFormat | None = None, *, embedding=None, head=None, vocab_size: int | None = None,
                 spec: str = "", **_) -> TorchSelectiveSSM:
    """mambapy's pure-PyTorch ``Mamba`` core (``mambapy.mamba.Mamba``) with ``embedding=`` (an nn.Embedding) and
    ``head=`` (:func:`_mambapy_head`) as a selective SSM.  (``mambapy.lm.LM`` imports mamba_ssm's CUDA kernels
    for Mamba-2, so a CPU model is the core with its parts: a factory returns ``{"module": net, "embedding": ...,
    "core": net.mamba, "head": ...}`` and ``net``'s own forward is the reference.)"""
    import torch.nn as nn
    core = unwrap(core)
    cfg = getattr(core, "config", None)
    if type(core).__name__ != "Mamba" or not hasattr(cfg, "d_conv"):
        raise AdapterError(f"expected mambapy's Mamba (mambapy.mamba.Mamba over a MambaConfig); got "
                           f"{type(core).__name__}")
    if getattr(cfg, "mup", False) or getattr(cfg, "inner_layernorms", False) or getattr(cfg, "use_cuda", False):
        raise AdapterError("this mambapy Mamba uses mup, inner_layernorms or the CUDA kernel; commsim's Mamba reads "
                           "the plain mixer (mup=False, inner_layernorms=False, use_cuda=False)")
    if not isinstance(embedding, nn.Embedding) or head is None:
        raise AdapterError("a mambapy Mamba core maps vectors to vectors: give it with embedding= (an nn.Embedding) "
                           "and head= (an nn.Linear, or nn.Sequential(RMSNorm, nn.Linear))")
    layers, eps = [], None
    for block in core.layers:
        weight, eps = _norm(block.norm)
        layers.append(_mixer_arrays(block.mixer, weight))
    norm_f, eps_f, head_w, head_b = _mambapy_head(head)
    embed = tensor(embedding.weight)
    _check_vocab(embed.shape[0], vocab_size, "this mambapy model")
    fmt = format_for_dtype(_dtype(core)) if fmt is None else fmt
    return TorchSelectiveSSM(embed, layers, norm_f, head_w, head_b, fmt, eps=eps, eps_f=eps_f,
                             spec=spec or "mambapy Mamba", torch_forward=MambaPartsForward(embedding, core, head),
                             source=f"mambapy Mamba ({len(layers)} layers, d_model {cfg.d_model}, d_state "
                                    f"{cfg.d_state}, d_conv {cfg.d_conv})")
