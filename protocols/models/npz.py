"""Weights files: the arrays of an ``.npz`` archive, read safely (shared by every ``.npz`` weights loader).

Nothing is unpickled (``allow_pickle=False``; an archive holding an object array is refused by name), the path must be a regular file, and each member's ``.npy``
header is read and judged against the member's size and the memory budget before any array is allocated.
"""
from __future__ import annotations

import math
import zipfile
import zlib

import numpy as np

from commsim.contract import InputError, ModelError, check_memory, regular_file, show_bytes


def _npz_sizes(path, where: str) -> int:
    """The bytes the arrays of the ``.npz`` archive ``path`` take once loaded, read from each member's
    ``.npy`` header (numpy.lib.format) before any array is allocated; an error when a header claims more
    data than its member holds (a 10^5 x 10^5 shape over 8 bytes would allocate 74.5 GiB).  The member
    sizes are the archive's own (zipfile refuses to decompress past them), so the sum is what loading takes."""
    total = 0
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as member:
                if member.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
                    total += info.file_size              # numpy returns a member that is not .npy as its bytes
                    continue
                member.seek(0)
                version = np.lib.format.read_magic(member)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read_header is None:               # numpy's 3.0 header: same fields, utf-8 names
                    shape, _, dtype = np.lib.format._read_array_header(member, version)
                else:
                    shape, _, dtype = read_header(member)
                if dtype.hasobject:                   # np.load would need allow_pickle=True: never given
                    raise ModelError(f"{where}: array {info.filename!r} holds pickled Python objects (dtype {dtype}), "
                                     f"which commsim refuses to load (unpickling can run code from the file); "
                                     f"save numeric arrays", "model")
                claimed, held = math.prod(shape) * dtype.itemsize, info.file_size - member.tell()
                if claimed != held:
                    raise ModelError(f"{where}: array {info.filename!r} claims shape {tuple(shape)} of {dtype} "
                                     f"({show_bytes(claimed)}) but holds {show_bytes(max(held, 0))}", "model")
                total += claimed
    return total


def read_npz(path, what: str = "weights file") -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` (shared by every ``.npz`` weights loader); an error naming
    the file and what is wrong when it is missing, not a regular file, empty, truncated, not an .npz
    archive, or when its arrays' headers claim more than the file holds or than the memory budget allows
    (judged from the headers, before anything is allocated)."""
    name = str(path)
    path = regular_file(path, f"{what} ")
    where = f"cannot read {what} {name!r}"
    try:
        if path.stat().st_size == 0:
            raise EOFError
        if not zipfile.is_zipfile(path):
            raise ModelError(f"{where}: it is not an .npz archive of named arrays (a single array or another "
                             f"format)", "model")
        total = _npz_sizes(path, f"{what} {name!r}")
        check_memory(2 * total, "model", f"loading the arrays of {what} {name!r}")   # read, then copied
        with np.load(path, allow_pickle=False) as data:
            return {k: np.array(data[k]) for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError) as exc:
        if isinstance(exc, InputError):
            raise
        reason = {EOFError: "it is empty"}.get(type(exc)) or \
            f"truncated or not an .npz file ({type(exc).__name__}: {exc})"
        raise ModelError(f"{where}: {reason}", "model") from None


def numeric_array(arrays: dict, key: str, ndim: int, path, what: str = "weights file") -> np.ndarray:
    """``arrays[key]`` as float64 once checked to hold finite real numbers in ``ndim`` dimensions."""
    arr, where = arrays[key], f"{what} {str(path)!r}: {key!r}"
    if arr.dtype.kind not in "biuf":
        raise ModelError(f"{where} holds {arr.dtype} values, not numbers", "model")
    if arr.ndim != ndim or not np.isfinite(arr).all():
        raise ModelError(f"{where} has shape {arr.shape}" + (", not finite numbers" if arr.ndim == ndim else
                                                            f": {arr.ndim} dimension(s), expected {ndim}"), "model")
    return arr.astype(np.float64)
