"""The torch model kinds of ``--model``: a user's factory, a saved file, Hugging Face GPT-2 and
TransformerLens, each turned into a commsim model by :func:`~protocols.adapters.torch.adapt.from_torch`.

Model kinds (``commsim run REDUCTION --model SPEC``):

``python:MODULE:FUNCTION[:key=value,...]``
    imports MODULE (the current directory comes first on ``sys.path``, as for ``python -m``; a path
    ``dir/file.py`` works too) and calls FUNCTION.  It may return a commsim model, a torch module
    (``nn.LSTM``/``nn.GRU``/``nn.RNN``, ``nn.MultiheadAttention`` -- a pre-LN block too -- or one
    ``nn.TransformerEncoderLayer`` inside a wrapping module with its ``nn.Embedding`` and head; a one-layer
    GPT-2; a TransformerLens model) or a dict of parts ``{"embedding", "core", "head", "positions", "norm",
    "residual"}``.  FUNCTION receives, by name, whichever
    of ``vocab_size``, ``seq_len``, ``n``, ``task``, ``reduction`` it accepts, and every key=value of the
    spec except ``precision``/``frac``/``dtype`` (ints and floats converted).
``torch:FILE.pt[:precision=P|dtype=NAME]``
    loads FILE with ``torch.load(weights_only=True)``: a module built from standard ``torch.nn``
    classes, or a dict of parts of them.  A file that pickles any other class is refused (loading it
    would run arbitrary code); load such a model in a ``python:`` factory instead.
``hf-gpt2[:DIR][:key=value,...]``
    a one-layer GPT-2 (``transformers.GPT2LMHeadModel``): from a local ``save_pretrained`` directory, a
    local ``config=FILE.json``, or random weights (``dim``, ``heads``, ``inner``, ``layers``, ``seed``);
    nothing is downloaded.
``hf:DIR``
    a Hugging Face model from a local ``save_pretrained`` directory, by its ``config.json``'s ``model_type``: a
    one-layer Llama, Qwen2, Mistral, Phi-3, Gemma, GPT-NeoX, GPT-J or GPT-2 as an attention layer
    (:mod:`.hf_decoders`), a Mamba or RWKV as a recurrence; another type is refused naming what stops it.
``hf-mamba:DIR``, ``hf-rwkv:DIR``, ``hf-llama:DIR``
    a Hugging Face ``MambaForCausalLM`` / ``RwkvForCausalLM`` from a local ``save_pretrained`` directory as a
    recurrence (every layer's state handed off); a one-layer ``LlamaForCausalLM`` as an attention layer
    (RMSNorm, RoPE, gated MLP, grouped-query attention: :mod:`.llama`; more layers refused) (:mod:`.hf_local`).
``tl[:key=value,...]``
    a random one-layer TransformerLens model (TransformerLens 4: ``TransformerBridge.boot_native``;
    3.x: ``HookedTransformer``), attention-only by default (``dim``, ``heads``, ``d_head``, ``attn_only``,
    ``norm``, ``layers``, ``seed``).

Division: ``division=once|per-weight`` (every kind) sets the attention layer's softmax division
(:mod:`protocols.models.attention`: ``once``, the default, rounds o = [U / Z] once; ``per-weight`` is
Appendix D of [BHBK24], each weight [e_i / Z] rounded first).  The agreement with the torch forward is
checked before it is applied, under ``once``; a recurrent model refuses the key.

Precision: the module's dtype (float32 -> p = 32, bfloat16 -> 16, float64 -> 64), or ``precision=P``
(P-bit fixed point) / ``dtype=NAME`` to override (:meth:`commsim.spec.ModelSpec.format_if_given`).
torch is imported only when a torch object is handled.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import sys
from pathlib import Path

from commsim.contract import (
    FORMAT_KEYS,
    InputError,
    MAX_SPEC_INT,
    check_memory,
    current_directory_on_path,
    regular_file,
    user_code_failure,
)
from protocols.adapters.torch import hf_local
from protocols.adapters.torch.adapt import from_torch
from protocols.adapters.torch.files import load_torch_file, read_json_config
from protocols.adapters.torch.framework import TORCH
from protocols.adapters.torch.layered import adapt_or_function
from protocols.adapters.torch.hf_files import check_model_files, load_failure
from protocols.adapters.torch.layers import AdapterError, require_torch
from protocols.models.attention import DIVISIONS, AttentionLayer

#: what a ``python:`` factory may receive from the task, by name
CONTEXT_KEYS = ("vocab_size", "seq_len", "n", "task", "reduction")


def _with_division(model, spec):
    """The spec's ``division=once|per-weight`` key, passed through to the attention layer built."""
    if spec.has("division"):
        division = spec.str("division", "once", DIVISIONS)
        if not isinstance(model, AttentionLayer):
            raise AdapterError(f"division= applies to an attention layer; {spec.text!r} is a "
                               f"{type(model).__name__}")
        model.division = division
    return model


def _literal(text: str):
    """A spec value as an int, float or bool when it reads as one, else the text."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    return text


# ---- python:MODULE:FUNCTION -----------------------------------------------------------------------------
def load_factory(target: str):
    """``MODULE:FUNCTION`` or ``path/to/file.py:FUNCTION`` -> the function.  The current directory is put
    first on ``sys.path`` (as ``python -m`` does) so a module of the project you are in imports."""
    module_name, sep, func_name = target.rpartition(":")
    if not sep or not module_name or not func_name:
        raise AdapterError(f"python: needs MODULE:FUNCTION (e.g. python:examples.factories:lstm_index), got {target!r}")
    current_directory_on_path()
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name or os.path.isfile(module_name):
        path = regular_file(module_name, "the file ", prefix="python: ")
        if path.suffix != ".py":
            raise AdapterError(f"python: file {module_name!r} is not a .py file; give path/to/file.py:{func_name} "
                               f"or a module name")
        name = f"commsim_user_{abs(hash(str(path.resolve())))}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except (Exception, SystemExit) as exc:
                del sys.modules[name]
                raise AdapterError(f"python: importing {module_name!r} failed: it {user_code_failure(exc)}") from exc
    else:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                raise AdapterError(f"python: cannot import module {module_name!r} ({exc}); run from the directory that "
                                   f"holds it, or give a path: python:path/to/file.py:{func_name}") from exc
            raise AdapterError(f"python: importing {module_name!r} failed: {exc}") from exc
        except (Exception, SystemExit) as exc:
            raise AdapterError(f"python: importing {module_name!r} failed: it {user_code_failure(exc)}") from exc
    func = getattr(module, func_name, None)
    if func is None or not callable(func):
        raise AdapterError(f"python: module {module_name!r} has no function {func_name!r}")
    return func


def _call_factory(func, label: str, params: dict, context: dict):
    """Call the user's factory with the context and spec keys it accepts (a clear error otherwise)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        sig = None
    accepts_any = sig is None or any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    names = set() if sig is None else set(sig.parameters)
    kwargs = {k: v for k, v in context.items() if v is not None and (accepts_any or k in names)}
    for key, value in params.items():
        if not accepts_any and key not in names:
            raise AdapterError(f"python: {label} takes no argument {key!r} (its parameters: "
                               f"{', '.join(sorted(names)) or 'none'})")
        kwargs[key] = value
    try:
        return func(**kwargs)
    except InputError:
        raise
    except (Exception, SystemExit) as exc:
        raise AdapterError(f"python: the factory {label} {user_code_failure(exc)}") from exc


@contextlib.contextmanager
def _quiet_loading():
    """Hugging Face's progress bars ("Loading weights", downloads) off while a model is built, then as they were:
    they are drawn on the user's terminal, not part of commsim's output."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        hf_logging = None
    was_on = hf_logging is not None and hf_logging.is_progress_bar_enabled()
    if was_on:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def python_factory(spec, **context):
    """A user's factory: python:MODULE:FUNCTION[:key=value,...] returning a torch module or a commsim model.
    What the module prints (on import or in the factory) goes to stderr: stdout carries commsim's report
    (``--json``)."""
    fmt = spec.format_if_given()
    params = {k: _literal(spec.str(k)) for k in list(spec.params) if k not in FORMAT_KEYS and k != "division"}
    with contextlib.redirect_stdout(sys.stderr):
        func = load_factory(spec.target)
        result = _call_factory(func, spec.target, params, {k: context.get(k) for k in CONTEXT_KEYS})
    return _with_division(adapt_or_function(result, lambda: from_torch(
        result, precision=fmt, vocab_size=context.get("vocab_size"), seq_len=context.get("seq_len"), spec=spec.text),
        spec.text, fmt), spec)


# ---- torch:FILE.pt ------------------------------------------------------------------------------------------
def torch_file_factory(spec, **context):
    """A saved torch model: torch:FILE.pt (weights-only loading; standard torch.nn modules or a dict of them)."""
    if not spec.target:
        raise AdapterError("torch: needs a file, e.g. torch:model.pt")
    fmt = spec.format_if_given()
    obj = load_torch_file(spec.target)
    return _with_division(adapt_or_function(obj, lambda: from_torch(
        obj, precision=fmt, vocab_size=context.get("vocab_size"), seq_len=context.get("seq_len"), spec=spec.text),
        spec.text, fmt), spec)


# ---- hf-gpt2 -------------------------------------------------------------------------------------------------
def _check_gpt2_size(dim: int, heads: int, layers: int, inner: int | None, vocab: int, positions: int,
                     what: str) -> None:
    """Refuse a GPT-2 whose width is not a multiple of its heads, or whose float32 parameters (embeddings;
    per layer attention 4 d^2 and MLP 2 d x inner) pass the memory budget -- from its sizes alone, before
    torch is imported or anything is built."""
    if dim % heads:
        raise AdapterError(f"hf-gpt2: {what}: the width {dim} is not a multiple of the {heads} heads")
    inner = inner or 4 * dim
    check_memory(4 * ((vocab + positions) * dim + layers * (4 * dim * dim + 2 * dim * inner)),
                 "model", f"the GPT-2 model of {what} (dim {dim}, {layers} layer(s), vocab {vocab})")


def _read_gpt2_config(path, label: str) -> dict:
    """A GPT-2 ``config.json`` (a regular file of at most :data:`~protocols.adapters.torch.files.MAX_CONFIG_BYTES`) as a dict, its sizes
    checked by :func:`_check_gpt2_size` (GPT2Config's defaults for the keys it leaves out); ``label`` names it
    in errors (``config=c.json``)."""
    config = read_json_config("hf-gpt2", path, label)
    if config.get("model_type", "gpt2") != "gpt2":
        hint = "hf:DIR reads the model type from config.json and loads it"
        try:
            hf_local.model_type_of("hf-gpt2", config, label)
        except AdapterError as exc:
            hint = str(exc).split(": ", 1)[-1]
        raise AdapterError(f"hf-gpt2: {label} describes a {str(config.get('model_type'))[:40]!r} model, not a gpt2 "
                           f"(GPT2LMHeadModel); {hint}", "model_type")
    sizes = {}
    for key, default in (("n_embd", 768), ("n_head", 12), ("n_layer", 12), ("n_inner", None),
                         ("vocab_size", 50257), ("n_positions", 1024)):
        value = config.get(key, default)
        if value is None and key == "n_inner":
            sizes[key] = None
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SPEC_INT:
            raise AdapterError(f"hf-gpt2: {label}: {key} must be an integer in [1, {MAX_SPEC_INT}], "
                               f"got {str(value)[:40]!r}")
        sizes[key] = value
    _check_gpt2_size(sizes["n_embd"], sizes["n_head"], sizes["n_layer"], sizes["n_inner"], sizes["vocab_size"],
                     sizes["n_positions"], label)
    return config


def _gpt2_directory(target: str) -> Path:
    """A ``save_pretrained`` directory whose entries are regular files or directories (a pipe or a device
    inside would block the loader), its config.json read and its sizes checked."""
    path = regular_file(target, "the model directory ", directory=True, prefix="hf-gpt2: ")
    if not path.is_dir():
        raise AdapterError(f"hf-gpt2: {target!r} is not a directory written by save_pretrained")
    for entry in path.iterdir():
        regular_file(entry, "", directory=True, prefix=f"hf-gpt2: in the model directory {target!r}: ")
    _read_gpt2_config(path / "config.json", f"the config.json of {target!r}")
    check_model_files("hf-gpt2", path, target)
    return path


def gpt2_factory(spec, vocab_size=None, seq_len=None, **context):
    """A one-layer Hugging Face GPT-2 from a local directory, a local config=FILE.json or random
    weights (dim, heads, inner, layers, seed, vocab, positions); never downloads.  Sizes are checked
    against the memory budget before torch is imported or anything is built."""
    keys = ("dim", "heads", "inner", "layers", "vocab", "positions", "seed")
    config_file = spec.file("config")
    if spec.target:
        given = [k for k in keys if spec.has(k)] + (["config"] if config_file else [])
        if given:
            raise AdapterError(f"hf-gpt2: {', '.join(given)} cannot be combined with a model directory")
        path = _gpt2_directory(spec.target)
    elif config_file is not None:
        config = _read_gpt2_config(config_file, f"config={spec.params['config']}")
    else:
        dim, heads = spec.int("dim", 16, minimum=1), spec.int("heads", 2, minimum=1)
        vocab = spec.int("vocab", vocab_size or 16, minimum=1)
        positions = spec.int("positions", seq_len or 64, minimum=1)
        layers, inner = spec.int("layers", 1, minimum=1), spec.int("inner", None, minimum=1)
        _check_gpt2_size(dim, heads, layers, inner, vocab, positions, repr(spec.text))
    torch = require_torch()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        raise AdapterError("hf-gpt2 needs transformers: pip install 'commsim[torch]'") from None
    fmt = spec.format_if_given()
    if spec.target:
        try:
            with _quiet_loading():
                model = GPT2LMHeadModel.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:
            raise AdapterError(f"hf-gpt2: cannot load {spec.target!r}: {load_failure(exc)}") from None
    else:
        if config_file is not None:
            try:
                config = GPT2Config.from_dict(config)
            except Exception as exc:
                raise AdapterError(f"hf-gpt2: cannot read config {str(config_file)!r}: "
                                   f"{type(exc).__name__}: {exc}") from None
        else:
            config = GPT2Config(n_layer=layers, n_embd=dim, n_head=heads,
                                n_inner=inner, vocab_size=vocab, n_positions=positions,
                                bos_token_id=0, eos_token_id=0)
        torch.manual_seed(spec.int("seed", 0, minimum=0))
        model = GPT2LMHeadModel(config)
    model.eval()
    if fmt is not None and getattr(fmt, "dtype", None) in ("float16", "bfloat16", "float64"):
        model = model.to(getattr(torch, fmt.dtype))
    return _with_division(from_torch(model, precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec.text),
                          spec)


# ---- tl ------------------------------------------------------------------------------------------------------
def tl_factory(spec, vocab_size=None, seq_len=None, **context):
    """A random one-layer TransformerLens model (attention-only by default): dim, heads, d_head,
    attn_only=0|1, norm=none|LN|LNPre|RMS, layers, seed, vocab, positions."""
    dim, heads = spec.int("dim", 16, minimum=1), spec.int("heads", 2, minimum=1)
    d_head = spec.int("d_head", max(dim // heads, 1), minimum=1)
    # float32 parameters: embeddings, per layer the heads (4 x heads x d_head x dim) and the MLP (8 dim^2);
    # judged before torch is imported or anything is built
    check_memory(4 * ((spec.int("vocab", vocab_size or 16, minimum=1) + spec.int("positions", seq_len or 64, minimum=1))
                      * dim + spec.int("layers", 1, minimum=1) * (4 * heads * d_head * dim + 8 * dim * dim)),
                 "model", f"the TransformerLens model of {spec.text!r} (dim {dim}, heads {heads}, d_head {d_head})")
    torch = require_torch()
    try:
        import transformer_lens
    except ImportError:
        raise AdapterError("tl needs TransformerLens: pip install 'commsim[torch]'") from None
    fmt = spec.format_if_given()
    dim = spec.int("dim", 16, minimum=1)
    heads = spec.int("heads", 2, minimum=1)
    d_head = spec.int("d_head", max(dim // heads, 1), minimum=1)
    norm = spec.str("norm", "none", choices=("none", "LN", "LNPre", "RMS", "RMSPre"))
    cfg = dict(d_model=dim, n_layers=spec.int("layers", 1, minimum=1), n_heads=heads, d_head=d_head,
               n_ctx=spec.int("positions", seq_len or 64, minimum=1),
               d_vocab=spec.int("vocab", vocab_size or 16, minimum=1),
               attn_only=bool(spec.int("attn_only", 1, minimum=0, maximum=1)),
               normalization_type=None if norm == "none" else norm, act_fn="gelu", seed=spec.int("seed", 0, minimum=0))
    bridge = getattr(transformer_lens, "TransformerBridge", None)
    try:  # TransformerLens 3.x; 4.x removed it (importing it raises ImportError there)
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError:
        HookedTransformer = None
    if HookedTransformer is not None:
        torch.manual_seed(cfg["seed"])
        model = HookedTransformer(HookedTransformerConfig(**cfg, positional_embedding_type="standard"))
    elif bridge is not None:
        import transformer_lens.model_bridge.sources.native  # noqa: F401  (attaches boot_native)
        with contextlib.redirect_stdout(io.StringIO()), _quiet_loading():  # keep --json output clean
            model = bridge.boot_native(cfg)
    else:  # pragma: no cover
        raise AdapterError("this TransformerLens has neither HookedTransformer nor TransformerBridge")
    model.eval()
    if fmt is not None and getattr(fmt, "dtype", None) in ("float16", "bfloat16", "float64"):
        with contextlib.redirect_stdout(io.StringIO()):  # TransformerLens prints "Changing model dtype ..."
            model = model.to(getattr(torch, fmt.dtype))
    return _with_division(from_torch(model, precision=fmt, vocab_size=vocab_size, seq_len=seq_len, spec=spec.text),
                          spec)


def register(registry) -> None:
    """The torch model kinds: ``python``, ``torch``, ``hf-gpt2``, ``tl``; the adapter for torch objects."""
    registry.register("adapter", "torch", TORCH, "PyTorch modules (and dicts of their parts) as models")
    registry.register("model", "python", python_factory,
                      "your factory: python:MODULE:FUNCTION[:key=value] returning a torch module or a commsim model")
    registry.register("model", "torch", torch_file_factory,
                      "a saved torch model: torch:FILE.pt (weights-only loading of standard torch.nn modules)")
    registry.register("model", "hf-gpt2", gpt2_factory,
                      "a one-layer Hugging Face GPT-2 (local DIR, config=FILE.json, or random dim=,heads=,seed=)")
    registry.register("model", "tl", tl_factory,
                      "a random one-layer TransformerLens model (dim=,heads=,attn_only=,norm=,seed=)")
    hf_local.register(registry, from_torch, _quiet_loading)
