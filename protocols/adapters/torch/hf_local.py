"""Hugging Face models from a local ``save_pretrained`` directory: ``hf:DIR`` reads ``config.model_type`` and loads
any of :data:`HF_CLASSES` -- the one-layer decoders :mod:`.hf_decoders` folds (Llama, Qwen2, Mistral, Phi-3, Gemma,
GPT-NeoX, GPT-J; GPT-2) and the recurrences -- and refuses another type naming what stops it; the kinds of one
class: the recurrences ``hf-mamba:DIR`` (``MambaForCausalLM``, its pure-PyTorch path: :mod:`.selective`) and
``hf-rwkv:DIR`` (``RwkvForCausalLM``: :mod:`.rwkv`), and the one-layer attention ``hf-llama:DIR``
(``LlamaForCausalLM``: RMSNorm, RoPE, gated MLP, grouped-query attention, folded by :mod:`.llama`; more layers are
refused, Lemma 5).

As ``hf-gpt2``: nothing is downloaded (``local_files_only``, ``HF_HUB_OFFLINE``); the directory's entries must
be regular files or directories (a pipe would block the loader), its ``config.json`` (at most
:data:`~protocols.adapters.torch.files.MAX_CONFIG_BYTES`) is read and the parameters' size checked against the memory
budget, and every file the loader would open is resolved and sized (:mod:`.hf_files`) before torch loads anything.
``precision=P``/``dtype=NAME`` override the model's dtype (float32 -> p = 32).
"""
from __future__ import annotations

import math
import os

from commsim.contract import MAX_SPEC_INT, check_memory, regular_file
from protocols.adapters.torch.files import read_json_config
from protocols.adapters.torch.hf_files import check_model_files, load_failure
from protocols.adapters.torch.layers import AdapterError, require_torch


def _sizes(config: dict, defaults: dict, kind: str, label: str) -> dict:
    """The integer sizes of ``config`` (``defaults`` for keys it leaves out; a None default may stay None)."""
    sizes = {}
    for key, default in defaults.items():
        value = config.get(key, default)
        if value is None and default is None:
            sizes[key] = None
            continue
        if key == "time_step_rank" and value == "auto":
            value = math.ceil(sizes["hidden_size"] / 16)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SPEC_INT:
            raise AdapterError(f"{kind}: {label}: {key} must be an integer in [1, {MAX_SPEC_INT}], "
                               f"got {str(value)[:40]!r}")
        sizes[key] = value
    return sizes


def _mamba_bytes(s: dict) -> int:
    """float32 bytes of a Mamba's parameters: embeddings and head, per layer in_proj, conv, x_proj, dt_proj, A, D,
    out_proj."""
    d, n, k = s["hidden_size"], s["state_size"], s["conv_kernel"]
    e, r = s["expand"] * d, s["time_step_rank"]
    return 4 * (2 * s["vocab_size"] * d + s["num_hidden_layers"] * (2 * d * e + e * (k + 1) + e * (r + 2 * n)
                                                                     + r * e + e * (n + 2) + e * d + d))


def _rwkv_bytes(s: dict) -> int:
    """float32 bytes of an RWKV's parameters: embeddings and head, per layer attention (4 d·a) and channel
    mixing (2 d·f + d²)."""
    d = s["hidden_size"]
    a, f = s["attention_hidden_size"] or d, s["intermediate_size"] or 4 * d
    return 4 * (2 * s["vocab_size"] * d + s["num_hidden_layers"] * (4 * d * a + 2 * d * f + d * d + 8 * d))


def _llama_bytes(s: dict) -> int:
    """float32 bytes of a Llama's parameters (embeddings and head; per layer q and o 2 d·H·h, k and v
    2 d·H_kv·h, the gated MLP 3 d·f, two norms)."""
    d, H = s["hidden_size"], s["num_attention_heads"]
    h, kv = s["head_dim"] or d // H, s["num_key_value_heads"] or H
    return 4 * (2 * s["vocab_size"] * d + s["num_hidden_layers"] * (2 * d * h * (H + kv)
                                                                     + 3 * d * s["intermediate_size"] + 2 * d))


#: kind -> (the transformers class, config.json's model_type, its size keys and defaults, the bytes they take)
KINDS = {
    "hf-mamba": ("MambaForCausalLM", "mamba",
                 {"hidden_size": 768, "state_size": 16, "conv_kernel": 4, "expand": 2, "num_hidden_layers": 32,
                  "vocab_size": 50280, "time_step_rank": "auto"}, _mamba_bytes),
    "hf-rwkv": ("RwkvForCausalLM", "rwkv",
                {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 50277, "attention_hidden_size": None,
                 "intermediate_size": None}, _rwkv_bytes),
    "hf-llama": ("LlamaForCausalLM", "llama",
                 {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000, "intermediate_size": 11008,
                  "num_attention_heads": 32, "num_key_value_heads": None, "head_dim": None},
                 _llama_bytes),
}


def _decoder_bytes(s: dict) -> int:
    """float32 bytes of a decoder's parameters read by :mod:`.hf_decoders` (embeddings, head and a position table;
    per layer q, k, v, o 2 d·h·(H + H_kv), an MLP of at most 3 d·f, norms)."""
    d, H = s["hidden_size"], s["num_attention_heads"]
    h, kv, f = s["head_dim"] or d // H, s["num_key_value_heads"] or H, s["intermediate_size"] or 4 * d
    return 4 * ((2 * s["vocab_size"] + (s["max_position_embeddings"] or 0)) * d
                + s["num_hidden_layers"] * (2 * d * h * (H + kv) + 3 * d * f + 4 * d))


#: transformers' class of each model_type ``hf:DIR`` loads (:mod:`.hf_decoders` folds the attention ones)
HF_CLASSES = {"mamba": "MambaForCausalLM", "rwkv": "RwkvForCausalLM", "llama": "LlamaForCausalLM",
              "gpt2": "GPT2LMHeadModel", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM",
              "phi3": "Phi3ForCausalLM", "gemma": "GemmaForCausalLM", "gpt_neox": "GPTNeoXForCausalLM",
              "gptj": "GPTJForCausalLM"}
#: config keys of a decoder's sizes under their other names (GPT-2 and GPT-J name them n_*)
ALIASES = {"hidden_size": "n_embd", "num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
           "intermediate_size": "n_inner", "max_position_embeddings": "n_positions"}
DECODER_SIZES = {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000, "intermediate_size": None,
                 "num_attention_heads": 32, "num_key_value_heads": None, "head_dim": None,
                 "max_position_embeddings": None}


def model_type_of(kind: str, config: dict, label: str) -> str:
    """The ``model_type`` of a config (``hf:DIR``): one commsim reads (:func:`~.hf_decoders.check_architecture`
    refuses the others, naming what stops them or listing the supported ones)."""
    from protocols.adapters.torch.hf_decoders import check_architecture
    model_type = config.get("model_type")
    if model_type in ("mamba", "rwkv"):
        return model_type
    if not isinstance(model_type, str):
        raise AdapterError(f"{kind}: {label} names no model_type (a config.json written by save_pretrained does)")
    try:
        check_architecture(model_type)
    except AdapterError as exc:
        raise AdapterError(f"{kind}: {exc}", "model_type") from None
    return model_type


def read_config(kind: str, path, label: str) -> dict:
    """A ``config.json`` (read by :func:`~protocols.adapters.torch.files.read_json_config`) as a dict, of the kind's
    model type (``hf``: any :data:`HF_CLASSES` reads), its parameters' size checked against the memory budget."""
    config = read_json_config(kind, path, label)
    if kind == "hf":
        model_type = model_type_of(kind, config, label)
        sub = f"hf-{model_type}" if f"hf-{model_type}" in KINDS else None
        cls, defaults, nbytes = HF_CLASSES[model_type], DECODER_SIZES, _decoder_bytes
        if sub is not None:
            cls, _, defaults, nbytes = KINDS[sub]
        elif model_type == "gpt2":
            defaults = {**DECODER_SIZES, "vocab_size": 50257, "max_position_embeddings": 1024}
        config_sizes = {key: config.get(key, config.get(ALIASES.get(key, ""), default))
                        for key, default in defaults.items()}
        sizes = _sizes(config_sizes, defaults, kind, label)
        check_memory(nbytes(sizes), "model", f"the {cls} of {label} ({sizes['num_hidden_layers']} layer(s), "
                                             f"hidden {sizes['hidden_size']}, vocab {sizes['vocab_size']})")
        return config
    cls, model_type, defaults, nbytes = KINDS[kind]
    if config.get("model_type", model_type) != model_type:
        other = config.get("model_type")
        try:
            model_type_of(kind, config, label)
            hint = "hf:DIR reads the model type from config.json and loads it"
        except AdapterError as exc:
            hint = str(exc).split(": ", 1)[-1]
        raise AdapterError(f"{kind}: {label} describes a {str(other)[:40]!r} model, not a {model_type} ({cls}); "
                           f"{hint}", "model_type")
    sizes = _sizes(config, defaults, kind, label)
    check_memory(nbytes(sizes), "model", f"the {cls} of {label} ({sizes['num_hidden_layers']} layer(s), "
                                         f"hidden {sizes['hidden_size']}, vocab {sizes['vocab_size']})")
    return config


def local_directory(kind: str, target: str):
    """A ``save_pretrained`` directory whose entries are regular files or directories, its config.json read and
    its sizes checked (:func:`read_config`)."""
    path = regular_file(target, "the model directory ", directory=True, prefix=f"{kind}: ")
    if not path.is_dir():
        raise AdapterError(f"{kind}: {target!r} is not a directory written by save_pretrained")
    for entry in path.iterdir():
        regular_file(entry, "", directory=True, prefix=f"{kind}: in the model directory {target!r}: ")
    config = read_config(kind, path / "config.json", f"the config.json of {target!r}")
    check_model_files(kind, path, target)
    return path, config


def _factory(kind: str, adapt, quiet_loading):
    """The model factory of ``kind``; ``adapt`` is :func:`~.adapt.from_torch` and ``quiet_loading`` the context
    that keeps Hugging Face's progress bars off (handed in by :func:`register`: this module is imported by both)."""
    def factory(spec, vocab_size=None, seq_len=None, **context):
        if not spec.target:
            raise AdapterError(f"{kind} needs a local directory written by save_pretrained: {kind}:DIR")
        unknown = [k for k in spec.params if k not in ("precision", "frac", "dtype")]
        if unknown:
            raise AdapterError(f"{kind}: unknown key(s) {', '.join(unknown)} (keys: precision=, frac=, dtype=)")
        path, config = local_directory(kind, spec.target)
        cls_name = HF_CLASSES[config["model_type"]] if kind == "hf" else KINDS[kind][0]
        fmt = spec.format_if_given()
        torch = require_torch()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import transformers
        except ImportError:
            raise AdapterError(f"{kind} needs transformers: pip install 'commsim[hf]'") from None
        try:
            with quiet_loading():
                model = getattr(transformers, cls_name).from_pretrained(str(path), local_files_only=True)
        except Exception as exc:
            raise AdapterError(f"{kind}: cannot load {spec.target!r}: {load_failure(exc)}") from None
        model.eval()
        if fmt is not None and getattr(fmt, "dtype", None) in ("float16", "bfloat16", "float64"):
            model = model.to(getattr(torch, fmt.dtype))
        return adapt(model, precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec.text)

    factory.__doc__ = (f"A Hugging Face {KINDS[kind][0] if kind in KINDS else 'decoder, by its model_type,'} from a "
                       f"local save_pretrained directory ({kind}:DIR[:precision=P|dtype=NAME]); never downloads.")
    return factory


DESCRIPTIONS = {
    "hf-mamba": "a Hugging Face MambaForCausalLM from a local DIR (any layers; state per layer: SSM + conv window)",
    "hf-rwkv": "a Hugging Face RwkvForCausalLM from a local DIR (any layers; state per layer: 5 vectors)",
    "hf-llama": "a Hugging Face LlamaForCausalLM from a local DIR (one layer: RMSNorm, RoPE, gated MLP, GQA)",
    "hf": "a Hugging Face model from a local DIR by its config's model_type (one-layer Llama, Qwen2, Mistral, Phi-3, "
          "Gemma, GPT-NeoX, GPT-J, GPT-2; Mamba and RWKV at any depth)",
}


def register(registry, adapt, quiet_loading) -> None:
    """The kinds ``hf``, ``hf-mamba``, ``hf-rwkv`` and ``hf-llama`` (``adapt``, ``quiet_loading``:
    :func:`_factory`)."""
    for kind, text in DESCRIPTIONS.items():
        registry.register("model", kind, _factory(kind, adapt, quiet_loading), text)
