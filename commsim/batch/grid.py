"""The grid of a sweep: ranges, model-spec patterns, and the cells they expand to, each keyed by a hash.

A sweep asks one question over many runs.  Its axes:

* reductions (registered ids);
* model specs with ranges in their values -- ``elman:width=2..8:x2,precision=4..8:+4`` is six specs --,
  alternatives separated by ``|`` (``activation=tanh|relu``, ``dtype=float16|float32``), and file
  globs in the target (``torch:ckpt/*.pt``: one spec per file, sorted);
* ``n``, the source problem's size, and the run's seed (``8..16:x2``, ``0..3``, ``8,12,16``);
* optionally a precision or dtype applied to every model spec.

Ranges: ``a..b`` (step 1), ``a..b:+K`` (arithmetic), ``a..b:xK`` (geometric, K >= 2); the end is
included when the steps reach it.  Sizes are counted from the range ends before any list is built, and
the whole grid is checked against :data:`MAX_CELLS` before anything runs.

A :class:`Cell` is one run (reduction, concrete spec, n, seed, instances, certify); its :meth:`Cell.key`
hashes exactly that (and the content of every file the spec names, :func:`spec_files`), so a resumed sweep
recognizes the cells it has already run, and a changed checkpoint, weights or factory file is a new cell;
:meth:`Cell.files_hash` is the files' part alone, the ``spec_files_hash`` column of every row.
"""
from __future__ import annotations

import glob
import hashlib
import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Sized
from dataclasses import dataclass, field

from commsim.core.errors import InputError
from commsim.core.limits import check_seed, check_size, show_size
from commsim.spec import FORMAT_KEYS, MAX_SPEC_INT

#: the most cells one sweep may have (each is a full ``run_reduction``)
MAX_CELLS = 10_000

#: bump when the meaning of a cell's key changes (old result files then simply re-run)
KEY_VERSION = 1

_RANGE = re.compile(r"^\s*(-?\d{1,19})\s*\.\.\s*(-?\d{1,19})\s*(?::\s*([x+])\s*(\d{1,19}))?\s*$")
_INT = re.compile(r"^\s*-?\d{1,19}\s*$")
#: spec keys whose value names a file (its content goes into the cell's key): npz weights, a Hugging Face config
FILE_KEYS = ("weights", "config")

#: the largest file whose content is hashed; a larger one is known by its size and modification time
MAX_HASHED_BYTES = 1 << 30

#: the most files of one model directory (``hf-gpt2:DIR``, ``hf-mamba:DIR``) that are hashed
MAX_DIRECTORY_FILES = 64


# ---- ranges -------------------------------------------------------------------------------------
def range_count(start: int, stop: int, op: str, step: int) -> int:
    """How many values ``start..stop`` with ``op`` (``+``/``x``) ``step`` has, from the ends alone."""
    if stop < start:
        return 0
    if op == "+":
        return (stop - start) // step + 1
    count, value = 1, start
    while value * step <= stop:                        # at most 64 steps: |values| < 2^63
        value *= step
        count += 1
    return count


def parse_item(text: str, param: str, *, limit: int = MAX_CELLS) -> list:
    """One value or range: ``7``, ``a..b``, ``a..b:+K``, ``a..b:xK`` -> a list of ints; any other text is
    itself (a word such as ``tanh`` or ``float16``).  A range that is empty, never advances or has more
    than ``limit`` values is an :class:`InputError` naming ``param``."""
    match = _RANGE.match(text)
    if match is None:
        if _INT.match(text):
            return [int(text)]
        if ".." in text and re.match(r"^\s*-?\d", text):
            raise InputError(f"{param}: {text!r} is not a range; write a..b, a..b:+K or a..b:xK", param)
        return [text.strip()]
    start, stop = int(match.group(1)), int(match.group(2))
    op, step = match.group(3) or "+", int(match.group(4) or 1)
    if stop < start:
        raise InputError(f"{param}: range {text.strip()!r} is empty (its end {stop} is below its start {start})", param)
    if op == "+" and step < 1:
        raise InputError(f"{param}: range {text.strip()!r} has step +{step}; the step must be at least +1", param)
    if op == "x" and (step < 2 or start < 1):
        raise InputError(f"{param}: range {text.strip()!r} must start at 1 or more and multiply by 2 or more", param)
    count = range_count(start, stop, op, step)
    if count > limit:
        raise InputError(f"{param}: range {text.strip()!r} has {show_size(count)} values, at most {limit}", param)
    if op == "+":
        return list(range(start, stop + 1, step))
    return [start * step ** k for k in range(count)]


def parse_values(text, param: str, *, separators: str = ",|", limit: int = MAX_CELLS) -> list:
    """A list of values and ranges (``8..16:x2``, ``8,12,16``, ``0..3|7``) -> the values, in order, without
    repeats; ints, lists and tuples pass through (each item may itself be a range string)."""
    if isinstance(text, bool):
        raise InputError(f"{param} must be an integer or a range, got {text!r}", param)
    if isinstance(text, int):
        return [text]
    if isinstance(text, str):
        items = re.split(f"[{re.escape(separators)}]", text)
    elif isinstance(text, Sized) and isinstance(text, Iterable) and not isinstance(text, (bytes, dict)):
        if len(text) > limit:                          # a range(4, 10**9) is counted, never listed
            raise InputError(f"{param}: {show_size(len(text))} values, at most {limit}", param)
        items = list(text)
    elif isinstance(text, Iterable) and not isinstance(text, (bytes, dict)):
        items = list(itertools.islice(text, limit + 1))   # a generator: at most one value more than allowed
        if len(items) > limit:
            raise InputError(f"{param}: more than {limit} values", param)
    else:
        items = re.split(f"[{re.escape(separators)}]", str(text))
    values: list = []
    seen: set = set()
    for item in items:
        if isinstance(item, bool):
            raise InputError(f"{param} must be an integer or a range, got {item!r}", param)
        expanded = [item] if isinstance(item, int) else \
            ([] if not str(item).strip() else parse_item(str(item), param, limit=limit))
        for value in expanded:
            if value not in seen:
                seen.add(value)
                values.append(value)
        if len(values) > limit:
            raise InputError(f"{param}: more than {limit} values", param)
    if not values:
        raise InputError(f"{param}: no values given (write a value, a list a,b,c or a range a..b:xK)", param)
    return values


def parse_ints(text, param: str, minimum: int = 0, maximum: int = MAX_SPEC_INT) -> list[int]:
    """:func:`parse_values` where every value must be an integer in [minimum, maximum]."""
    values = parse_values(text, param)
    for v in values:
        if not isinstance(v, int):
            raise InputError(f"{param}: {v!r} is not an integer or a range a..b[:xK|:+K]", param)
        check_size(v, param, minimum, maximum)
    return values


# ---- model-spec patterns ------------------------------------------------------------------------
def _split_pattern(pattern: str) -> tuple[str, list[tuple[str, str]]]:
    """``KIND[:TARGET]:k=v,...`` -> (prefix, [(key, value text)]), where a value may hold ``:xK`` ranges."""
    parts = pattern.strip().split(":")
    first = next((i for i, part in enumerate(parts) if "=" in part), len(parts))
    prefix, params = ":".join(parts[:first]), []
    for item in ":".join(parts[first:]).split(","):
        if not item.strip():
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"model spec {pattern!r}: {item!r} is not key=value", "model")
        params.append((key.strip(), value.strip()))
    return prefix, params


def _expand_prefix(prefix: str, pattern: str) -> list[tuple[str, str | None]]:
    """The prefix with a file glob in one of its segments (``torch:ckpt/*.pt``) -> (prefix, file) per file,
    sorted; a prefix without a glob is itself (file None)."""
    parts = prefix.split(":")
    magic = [i for i, part in enumerate(parts) if glob.has_magic(part)]
    if not magic:
        return [(prefix, None)]
    if len(magic) > 1:
        raise InputError(f"model spec {pattern!r}: only one segment may be a file pattern", "model")
    i = magic[0]
    files = sorted(glob.glob(parts[i]))
    if not files:
        raise InputError(f"model spec {pattern!r}: no file matches {parts[i]!r}", "model")
    if len(files) > MAX_CELLS:
        raise InputError(f"model spec {pattern!r}: {parts[i]!r} matches {len(files)} files, at most {MAX_CELLS}",
                         "model")
    return [(":".join(parts[:i] + [f] + parts[i + 1:]), f) for f in files]


@dataclass(frozen=True)
class SpecChoice:
    """One concrete model spec of a pattern, with the values its ranged keys took (for the table's columns)."""

    spec: str
    pattern: str
    varied: tuple[tuple[str, object], ...] = ()


def _model_axes(pattern: str, precision=None, dtype=None) -> tuple[str, list, list, set]:
    """A pattern's prefix, its keys with their texts, the values of each key, the keys that vary."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise InputError("model spec is empty; write KIND[:key=value,...]", "model")
    prefix, params = _split_pattern(pattern)
    keys = [k for k, _ in params]
    if len(set(keys)) != len(keys):
        raise InputError(f"model spec {pattern!r}: a key is given twice", "model")
    for extra, name in ((precision, "precision"), (dtype, "dtype")):
        if extra is None:
            continue
        if any(k in FORMAT_KEYS for k in keys):
            raise InputError(f"model spec {pattern!r} sets its number format already; leave out --{name} or the "
                             "spec's precision/dtype", name)
        params.append((name, "|".join(str(v) for v in extra)))
    axes = [[(k, v) for v in parse_values(value, "model", separators="|")] for k, value in params]
    varied_keys = {k for (k, _), axis in zip(params, axes) if len(axis) > 1}
    count = 1
    for axis in axes:
        count *= len(axis)
        if count > MAX_CELLS:
            raise InputError(f"model spec {pattern!r} stands for more than {MAX_CELLS} specs", "model")
    return prefix, params, axes, varied_keys


def count_model(pattern: str, *, precision=None, dtype=None) -> int:
    """How many concrete specs a pattern stands for (:func:`expand_model`'s length), counted without building
    them: the values of each key times the files of a glob."""
    prefix, _, axes, _ = _model_axes(pattern, precision, dtype)
    count = 1
    for axis in axes:
        count *= len(axis)
    return count * len(_expand_prefix(prefix, pattern))


def expand_model(pattern: str, *, precision=None, dtype=None) -> list[SpecChoice]:
    """Every concrete spec a pattern stands for, in order (the last key varies fastest).  ``precision`` /
    ``dtype`` (lists of values, or None) add that key to every spec; a spec that already sets a number
    format keeps its own and is an error only when both are given."""
    prefix, params, axes, varied_keys = _model_axes(pattern, precision, dtype)
    out = []
    for head, file in _expand_prefix(prefix, pattern):
        for combo in itertools.product(*axes):
            text = head + (":" + ",".join(f"{k}={v}" for k, v in combo) if combo else "")
            varied = (() if file is None else (("file", file),)) + tuple((k, v) for k, v in combo if k in varied_keys)
            out.append(SpecChoice(text, pattern.strip(), varied))
    return out


# ---- cells --------------------------------------------------------------------------------------
def _file_digest(path: str) -> str | None:
    """sha256 of a regular file's content -- or, for a file over :data:`MAX_HASHED_BYTES`, its size and
    modification time -- (None when ``path`` is not a readable regular file: a pipe or a device is never opened)."""
    try:
        if not os.path.isfile(path):
            return None
        info = os.stat(path)
        if info.st_size > MAX_HASHED_BYTES:
            return f"size={info.st_size},mtime_ns={info.st_mtime_ns}"
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def _module_file(name: str) -> str | None:
    """The source file of the module ``name`` (``mymodels``, ``pkg.models``) as ``python:MODULE:FUNCTION`` finds it
    -- the current directory first, then ``sys.path`` --, found without importing anything; None when none is."""
    from importlib.machinery import PathFinder
    if not all(part.isidentifier() for part in name.split(".")):
        return None
    path, found = [os.getcwd(), *(p for p in sys.path if p)], None
    for part in name.split("."):
        try:
            spec = PathFinder.find_spec(part, path)
        except (ImportError, ValueError, OSError):
            return None
        if spec is None:
            return None
        path, found = list(spec.submodule_search_locations or []), spec.origin
    return found if found and found.endswith(".py") else None


def spec_files(spec: str) -> dict[str, str]:
    """The files a concrete spec names -> their content digests (:func:`_file_digest`): every target segment that
    is a regular file (``torch:FILE.pt``, ``python:FILE.py:FUNCTION``), the regular files directly inside a target
    segment that is a directory (``hf-gpt2:DIR``: config and weights; at most :data:`MAX_DIRECTORY_FILES`, by
    name), the module file of ``python:MODULE:FUNCTION``, and the files of :data:`FILE_KEYS` (``weights=``,
    ``config=``).  Regular files only; nothing is imported or run."""
    prefix, params = _split_pattern(spec)
    kind, *segments = prefix.split(":")
    names = segments + [v for k, v in params if k in FILE_KEYS]
    digests = {}
    if kind == "python" and segments and not os.path.exists(segments[0]):
        module = _module_file(segments[0])             # named by the module, as the spec names it
        digests[segments[0]] = None if module is None else _file_digest(module)
    for name in names:
        if os.path.isdir(name):
            try:
                entries = sorted(os.listdir(name))
            except OSError:
                continue
            inside = [os.path.join(name, entry) for entry in entries if os.path.isfile(os.path.join(name, entry))]
            for path in inside[:MAX_DIRECTORY_FILES]:
                digests[path] = _file_digest(path)
            continue
        digest = _file_digest(name)
        if digest is not None:
            digests[name] = digest
    return {name: digest for name, digest in digests.items() if digest is not None}


@dataclass(frozen=True)
class Cell:
    """One run of the grid: ``run_reduction(reduction, model, n, instances=..., seed=..., certify=...)``."""

    reduction: str
    model: str
    n: int | None
    seed: int = 0
    instances: int | None = None
    certify: bool = True
    pattern: str = ""
    varied: tuple = ()
    files: tuple = field(default=(), compare=False)

    def identity(self) -> dict:
        """What the key hashes: the run's arguments and the content of the files the spec names."""
        return {"version": KEY_VERSION, "reduction": self.reduction, "model": self.model, "n": self.n,
                "seed": self.seed, "instances": self.instances, "certify": self.certify, "files": dict(self.files)}

    def key(self) -> str:
        """A short stable hash of :meth:`identity` (16 hex digits)."""
        text = json.dumps(self.identity(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def files_hash(self) -> str | None:
        """A short hash (16 hex digits) of the files the spec names and their digests (:func:`spec_files`), None
        when it names none: rows made before and after a factory or checkpoint edit differ in it."""
        if not self.files:
            return None
        text = json.dumps(dict(self.files), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_grid(reductions, models, ns, seeds=(0,), *, instances: int | None = None, certify: bool = True,
               precision=None, dtype=None) -> list[Cell]:
    """The cells of reductions x model patterns x n x seeds, checked against :data:`MAX_CELLS` (counted
    before the cells are built).  ``models`` entries may be None (the reduction's default model)."""
    reductions = [reductions] if isinstance(reductions, str) else list(reductions)
    if not reductions or any(not isinstance(r, str) or not r.strip() for r in reductions):
        raise InputError("reduction: give at least one reduction id (commsim list shows them)", "reduction")
    models = [models] if models is None or isinstance(models, str) else list(models)
    if not models:
        models = [None]
    ns = [None] if ns is None else parse_ints(ns, "n", minimum=1)
    seeds = [check_seed(s) for s in parse_ints(seeds, "seed", minimum=0)]
    precision = None if precision is None else parse_values(precision, "precision")
    dtype = None if dtype is None else parse_values(dtype, "dtype")
    per_spec = len(reductions) * len(ns) * len(seeds)
    count = 0
    for number, pattern in enumerate(models, 1):     # counted before any spec is built: a grid too large fails fast
        count += per_spec * (1 if pattern is None else count_model(pattern, precision=precision, dtype=dtype))
        if count > MAX_CELLS and number < len(models):
            raise InputError(f"grid: the first {number} of {len(models)} model specs already make {show_size(count)} "
                             f"cells: too large (each cell is a full run); the largest number of cells that runs is "
                             f"{MAX_CELLS}", "grid")
    check_size(count, "grid", 1, MAX_CELLS, why="each cell is a full run", noun="number of cells")
    choices = []
    for pattern in models:
        if pattern is None:
            if precision is not None or dtype is not None:
                raise InputError("precision/dtype need a model spec to apply to", "model")
            choices.append(SpecChoice("", "", ()))
        else:
            choices.extend(expand_model(pattern, precision=precision, dtype=dtype))
    files = {c.spec: tuple(sorted(spec_files(c.spec).items())) for c in choices if c.spec}
    return [Cell(r.strip(), c.spec or None, n, seed, instances, certify, c.pattern, c.varied, files.get(c.spec, ()))
            for r in reductions for c in choices for n in ns for seed in seeds]
