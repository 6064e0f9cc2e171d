"""Saved torch models: loading a ``torch.save`` file safely (weights only, standard ``torch.nn``
modules) and saving a dict of parts that loads that way (``--model torch:FILE.pt``)."""
from __future__ import annotations

import json
import re

from commsim.contract import check_memory, regular_file
from protocols.adapters.torch.layers import AdapterError, require_torch

#: the most bytes of a Hugging Face ``config.json`` read (a real one has a few thousand)
MAX_CONFIG_BYTES = 1 << 20
#: the deepest nesting of lists and objects in a ``config.json`` accepted (a real one nests two or three)
MAX_CONFIG_DEPTH = 32


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
    except (OSError, ValueError) as exc:
        raise AdapterError(f"{kind}: cannot read {label}: {type(exc).__name__}: {str(exc)[:200]}") from None
    except RecursionError:      # nested deeper than the parser's stack
        config = None
    if config is None or _depth(config) > MAX_CONFIG_DEPTH:
        raise AdapterError(f"{kind}: {label} nests its values more than {MAX_CONFIG_DEPTH} levels deep; a "
                           f"config.json of model settings nests a few")
    if not isinstance(config, dict):
        raise AdapterError(f"{kind}: {label} is not a JSON object of model settings")
    return config


def _depth(value) -> int:
    """How deep lists and objects nest in a parsed JSON value (counted without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_CONFIG_DEPTH:
                stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


#: what torch says after refusing a global (its advice to load with weights_only=False is never repeated)
_GLOBAL = re.compile(r"unsupported(?: global:)? GLOBAL (\S+)", re.IGNORECASE)


def refusal(path: str, text: str) -> str:
    """The error line for a ``torch:`` file that the weights-only unpickler refused (torch's message ``text``):
    the global it pickles when torch names one (``Unsupported global: GLOBAL x.C was not an allowed global``,
    ``Trying to load unsupported GLOBAL posix.system whose module posix is blocked``), else torch's own reason
    without its advice to load the file with weights_only=False, which would run the code it holds."""
    found = _GLOBAL.search(text)
    if found:
        name = found.group(1).rstrip(".,:;")
        return (f"torch: {path!r} pickles {name}, which commsim will not load from a file: only weights "
                f"and the standard torch.nn modules ({', '.join(SAFE_MODULES)}) load safely (weights_only=True). "
                f"Save a dict of standard parts (protocols.adapters.torch.save_parts), or build your class in a "
                f"python:MODULE:FUNCTION factory that loads a state_dict")
    detail = text.split("WeightsUnpickler error:", 1)[-1]
    lines = [line.strip() for line in detail.replace("\t", " ").split("\n") if line.strip()]
    kept = [line for line in lines if "weights_only" not in line and "torch.load" not in line
            and "Weights only load failed" not in line]
    reason = "the weights-only unpickler refused it" + (f": {kept[0][:200]}" if kept else "")
    return f"torch: {path!r} is not a torch.save file commsim can load safely with weights_only=True ({reason})"


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
        raise AdapterError(refusal(path, str(exc))) from None
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
