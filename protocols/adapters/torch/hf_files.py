"""The files of a Hugging Face ``save_pretrained`` directory, checked before transformers opens any of them
(``hf:DIR``, ``hf-gpt2:DIR``, ``hf-llama:DIR``, ``hf-mamba:DIR``, ``hf-rwkv:DIR``):

* every file the loader reads is resolved first: a name in a sharded index's ``weight_map`` must be a relative
  path that stays inside the directory (no absolute path, no ``..``) and must name a regular file -- a FIFO
  would block the loader forever, ``/dev/zero`` would be read until memory runs out (a symlink is followed: a
  Hugging Face cache snapshot links every file to its blob);
* the side files the loader parses whole (``generation_config.json``, ``adapter_config.json``, the indexes) are
  at most :data:`SIDE_FILE_BYTES`; ``config.json`` is read by :func:`~.files.read_json_config`;
* the tensors' sizes are read from what each weights file declares -- a safetensors header (its dtypes, shapes
  and data offsets, checked against each other and the file's length), a ``torch.save`` zip's record sizes --
  and their sum is checked against the memory budget (:func:`commsim.core.limits.check_memory`): a sparse file
  declaring a 6 GB tensor is refused without a byte of it being read or allocated.

:func:`load_failure` words a loader's error for the user: a pickled payload is named and refused (torch's two
wordings, ``Unsupported global: GLOBAL x.y`` and ``unsupported GLOBAL x.y whose module x is blocked``), and
torch's advice to load with ``weights_only=False`` -- which would run the payload -- is never passed on.
"""
from __future__ import annotations

import json
import re
import struct
import zipfile
from pathlib import Path, PurePosixPath

from commsim.contract import check_memory, regular_file
from protocols.adapters.torch.files import MAX_CONFIG_BYTES
from protocols.adapters.torch.layers import AdapterError

#: the most bytes of a side file (an index, a generation or adapter config) read
SIDE_FILE_BYTES = 8 * MAX_CONFIG_BYTES
#: the most bytes of a safetensors header read (the safetensors library's own limit)
MAX_HEADER_BYTES = 100_000_000
#: side files the loader parses whole when they exist
SIDE_FILES = ("generation_config.json", "adapter_config.json")
#: weights files the loader reads (directly, or through an index's weight_map)
WEIGHTS = ("model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin")
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
#: bytes per element of each safetensors dtype
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2,
               "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}


def _side_file(kind: str, path: Path, target: str) -> dict:
    """A side file (at most :data:`SIDE_FILE_BYTES`) as a JSON object."""
    label = f"{path.name} of {target!r}"
    size = regular_file(path, "", prefix=f"{kind}: {label}: ").stat().st_size
    if size > SIDE_FILE_BYTES:
        raise AdapterError(f"{kind}: the {label} has {size} bytes; such a file has a few thousand (at most "
                           f"{SIDE_FILE_BYTES} are read)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise AdapterError(f"{kind}: cannot read the {label}: {type(exc).__name__}: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise AdapterError(f"{kind}: the {label} is not a JSON object")
    return data


def _named_file(kind: str, root: Path, name, index: str, target: str) -> Path:
    """The file an index names: a relative path inside ``root`` to a regular file."""
    where = f"{kind}: the {index} of {target!r} names {str(name)[:80]!r}"
    if not isinstance(name, str) or not name or "\x00" in name:
        raise AdapterError(f"{where}: not a file name")
    parts = PurePosixPath(name.replace("\\", "/"))
    if parts.is_absolute() or Path(name).is_absolute() or ".." in parts.parts:
        raise AdapterError(f"{where}: a weights file must be named by a path inside the model directory (no "
                           f"absolute path, no '..')")
    return regular_file(root / name, "", prefix=f"{where}: ")


def safetensors_bytes(kind: str, path: Path, target: str) -> int:
    """The bytes of the tensors a safetensors file declares, its header checked against itself and the file."""
    label = f"{kind}: the weights file {path.name!r} of {target!r}"
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise AdapterError(f"{label} is not a safetensors file (shorter than its header's length)")
        n = struct.unpack("<Q", head)[0]
        if n > min(MAX_HEADER_BYTES, size - 8):
            raise AdapterError(f"{label} declares a header of {n} bytes in a file of {size}: not a safetensors file "
                               f"commsim reads")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise AdapterError(f"{label}: its header is not JSON ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise AdapterError(f"{label}: its header is not a JSON object")
    total, data = 0, size - 8 - n
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        ok = isinstance(entry, dict) and entry.get("dtype") in DTYPE_BYTES
        shape, offsets = (entry.get("shape"), entry.get("data_offsets")) if ok else (None, None)
        ok = ok and isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)
        ok = ok and isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
        if not ok:
            raise AdapterError(f"{label}: the tensor {str(name)[:60]!r} has no valid dtype, shape and data_offsets")
        count = DTYPE_BYTES[entry["dtype"]]
        for s in shape:
            count *= s
        begin, end = offsets
        if not 0 <= begin <= end <= data or end - begin != count:
            raise AdapterError(f"{label}: the tensor {str(name)[:60]!r} declares {count} bytes at offsets "
                               f"{begin}..{end} of {data} bytes of data")
        total += count
    return total


def torch_zip_bytes(kind: str, path: Path, target: str) -> int:
    """The bytes a ``torch.save`` zip archive's records declare (its tensors' storages and its pickle)."""
    label = f"{kind}: the weights file {path.name!r} of {target!r}"
    try:
        with zipfile.ZipFile(path) as archive:
            return sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise AdapterError(f"{label} is not a torch.save zip archive ({type(exc).__name__}: {str(exc)[:120]}); "
                           f"commsim reads weights saved by save_pretrained (safetensors) or by torch >= 1.6"
                           ) from None


def _weights_bytes(kind: str, path: Path, target: str) -> int:
    """The declared bytes of one weights file, by its suffix."""
    if path.name.endswith(".safetensors"):
        return safetensors_bytes(kind, path, target)
    return torch_zip_bytes(kind, path, target)


def check_model_files(kind: str, root: Path, target: str) -> int:
    """Resolve and size every file the loader would read in the ``save_pretrained`` directory ``root`` (module
    docstring); the total bytes of the declared tensors, checked against the memory budget."""
    for name in SIDE_FILES:
        if (root / name).exists() or (root / name).is_symlink():
            _side_file(kind, root / name, target)
    files: dict[Path, None] = {}
    for name in WEIGHTS:
        if (root / name).exists() or (root / name).is_symlink():
            files[regular_file(root / name, "", prefix=f"{kind}: {target!r}: ")] = None
    for index in INDEXES:
        if not ((root / index).exists() or (root / index).is_symlink()):
            continue
        weight_map = _side_file(kind, root / index, target).get("weight_map")
        if not isinstance(weight_map, dict):
            raise AdapterError(f"{kind}: the {index} of {target!r} has no weight_map of tensor names to files")
        for shard in dict.fromkeys(weight_map.values()):
            path = _named_file(kind, root, shard, index, target)
            suffix = ".safetensors" if index.startswith("model.safetensors") else ".bin"
            if not path.name.endswith(suffix):
                raise AdapterError(f"{kind}: the {index} of {target!r} names {shard!r}, not a {suffix} file")
            files[path] = None
    total = sum(_weights_bytes(kind, path, target) for path in files)
    check_memory(total, "model", f"the weights {target!r} declares ({len(files)} file(s))")
    return total


_GLOBAL = re.compile(r"[Uu]nsupported (?:global: )?GLOBAL ([\w.]+)")


def load_failure(exc: BaseException) -> str:
    """A loader's error in words for the user: a pickled payload named and refused; never torch's advice to
    load with ``weights_only=False`` (module docstring)."""
    chain, seen = [], exc
    while seen is not None and len(chain) < 5:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = "\n".join(str(e) for e in chain)
    found = _GLOBAL.search(text)
    if found:
        return (f"a weights file pickles {found.group(1)}, which commsim refuses to load: loading it would run "
                f"code; a save_pretrained directory's weights hold tensors only (re-save them as safetensors)")
    kept = [s for s in re.split(r"(?<=[.!?])\s+|\n+", str(exc)) if s.strip() and not re.search(
        r"weights_only|arbitrary code|trust(ed)? (the )?source|safe_globals|add_safe_globals", s)]
    detail = " ".join(kept).strip() or "unreadable"
    return f"{type(exc).__name__}: {detail[:300]}"
