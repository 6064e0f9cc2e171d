"""Saved torch models: loading a ``torch.save`` file safely (weights only, standard ``torch.nn``
modules) and saving a dict of parts that loads that way (``--model torch:FILE.pt``)."""
from __future__ import annotations

import json

from commsim.core.limits import check_memory
from commsim.spec import regular_file
from protocols.adapters.torch.layers import AdapterError, require_torch

#: the most bytes of a Hugging Face ``config.json`` read (a real one has a few thousand)
MAX_CONFIG_BYTES = 1 << 20


def read_json_config(kind: str, path, label: str) -> dict:
    """A Hugging Face ``config.json`` (a regular file of at most :data:`MAX_CONFIG_BYTES`) as a dict; ``kind``
    (``hf-gpt2``, ``hf-mamba``, ...) and ``label`` (``config=c.json``) name it in errors."""
    path = regular_file(path, "", prefix=f"{kind}: {label}: ")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise AdapterError(f"{kind}: {label} has {size} bytes; a config.json has a few thousand (at most "
                           f"{MAX_CONFIG_BYTES} are read)")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:     # RecursionError: nested deeper than JSON is read
        raise AdapterError(f"{kind}: cannot read {label}: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(config, dict):
        raise AdapterError(f"{kind}: {label} is not a JSON object of model settings")
    return config

#: torch.nn classes a ``torch:`` file may contain (loaded with weights_only=True and these allowed)
SAFE_MODULES = ("Sequential", "ModuleList", "ModuleDict", "Embedding", "RNN", "LSTM", "GRU", "Linear",
                "MultiheadAttention", "ReLU", "Tanh", "Sigmoid", "GELU", "LeakyReLU", "Softmax", "Identity",
                "Dropout", "LayerNorm", "Flatten", "RMSNorm", "TransformerEncoderLayer", "TransformerEncoder")
#: torch.nn.functional activations an ``nn.TransformerEncoderLayer`` keeps (allowed with the modules)
SAFE_FUNCTIONS = ("relu", "gelu")


def load_torch_file(path: str):
    """``torch.load(path, weights_only=True)`` with the standard torch.nn classes of
    :data:`SAFE_MODULES` allowed; anything else that would unpickle code is refused."""
    import pickle
    p = regular_file(path, "the model file ", prefix="torch: ")   # not a directory, a pipe or a device
    # torch.save stores tensors uncompressed: what loading takes is about the file's size
    check_memory(p.stat().st_size, "model", f"loading the torch file {path!r}")
    torch = require_torch()
    import torch.nn as nn
    safe = [getattr(nn, name) for name in SAFE_MODULES]
    from torch.nn.modules.linear import NonDynamicallyQuantizableLinear
    safe.append(NonDynamicallyQuantizableLinear)
    safe += [getattr(nn.functional, name) for name in SAFE_FUNCTIONS]
    try:
        with torch.serialization.safe_globals(safe):
            obj = torch.load(str(p), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        text = str(exc)
        marker = "Unsupported global: GLOBAL "
        if marker in text:
            name = text.split(marker, 1)[1].split()[0]
            raise AdapterError(f"torch: {path!r} pickles {name}, which commsim will not load from a file: only "
                               f"weights and the standard torch.nn modules ({', '.join(SAFE_MODULES)}) load safely "
                               f"(weights_only=True). Save a dict of standard parts (protocols.adapters.torch."
                               f"save_parts), or build your class in a python:MODULE:FUNCTION factory that loads a "
                               f"state_dict") from None
        detail = text.split("WeightsUnpickler error:", 1)[-1].strip().split("\n\n")[0].strip() \
            if "WeightsUnpickler error:" in text else ""
        reason = f"the weights-only unpickler refused it: {detail}" if detail else "unreadable"
        raise AdapterError(f"torch: {path!r} is not a torch.save file commsim can load safely with weights_only=True "
                           f"({reason})") from None
    except Exception as exc:  # not a torch.save file (bad magic number, truncated zip, a text file, ...)
        raise AdapterError(f"torch: {path!r} is not a file written by torch.save ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else 'unreadable'})") from None
    if isinstance(obj, dict) and obj and all(torch.is_tensor(v) for v in obj.values()):
        raise AdapterError(f"torch: {path!r} holds only a state_dict (weights without the modules that use "
                           f"them); load it into your module in a python:MODULE:FUNCTION factory, or save the "
                           f"modules themselves")
    return obj


def save_parts(path: str, core, embedding=None, head=None, positions=None, **extra) -> None:
    """``torch.save`` a dict of parts that ``--model torch:PATH`` loads safely (standard modules only)."""
    torch = require_torch()
    parts = {"core": core, "embedding": embedding, "head": head, "positions": positions, **extra}
    torch.save({k: v for k, v in parts.items() if v is not None}, path)
