"""Inputs by rank: the k-th Alice (or Bob) input and the k-th instance of a problem, without listing them.

A problem enumerates its inputs in a fixed order (:meth:`commsim.theory.problems.Problem.alice_inputs`:
bit strings in binary counting order) and its instances Alice-major
(:meth:`~commsim.theory.problems.Problem.all_pairs`: rank r is Alice input r // |Bob inputs| with Bob input
r % |Bob inputs|).  Sharded searches cut these ranks into ranges, so each shard builds only its own inputs:
:func:`inputs_at` computes bit-string inputs from their ranks (any n), and reads other problems' inputs off
the problem's own list (built once; its size limits apply).
"""
from __future__ import annotations

import functools

import numpy as np

from commsim.theory.problems import Problem

__all__ = ["inputs_at", "pairs_at"]


def _bit_rows(codes: np.ndarray, n: int) -> np.ndarray:
    """Codes as rows of n bits, most significant first (the order of ``all_bit_strings``)."""
    shifts = np.arange(n - 1, -1, -1, dtype=np.uint64)
    return ((np.asarray(codes).astype(np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _listed_inputs(problem: Problem, side: str) -> np.ndarray:
    """A problem's own list of inputs for one side (problems whose inputs are not plain bit strings)."""
    return np.asarray(problem.alice_inputs() if side == "alice" else problem.bob_inputs())


def inputs_at(problem: Problem, side: str, index) -> np.ndarray:
    """The ``side`` ("alice" or "bob") inputs with these ranks in the problem's enumeration order:
    ``problem.alice_inputs()[index]`` (or ``bob_inputs``), computed from the ranks for bit-string inputs."""
    own = Problem.alice_inputs if side == "alice" else Problem.bob_inputs
    if getattr(type(problem), f"{side}_inputs") is own:
        return _bit_rows(np.asarray(index, dtype=np.int64).reshape(-1), problem.n)
    return _listed_inputs(problem, side)[np.asarray(index)]


def pairs_at(problem: Problem, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """The instances of ranks start..stop-1 as aligned (Alice, Bob) arrays: ``all_pairs()`` sliced [start:stop]."""
    ranks = np.arange(start, stop, dtype=np.int64)
    ia, ib = np.divmod(ranks, np.int64(problem.bob_input_count))
    if not len(ia):
        return inputs_at(problem, "alice", ia), inputs_at(problem, "bob", ib)
    first = int(ia[0])    # the Alice ranks are one contiguous range, each repeated: build each input once
    repeats = np.bincount(ia - first)      # each Alice input's instances, consecutive (a copy, not a gather)
    return (np.repeat(inputs_at(problem, "alice", np.arange(first, int(ia[-1]) + 1)), repeats, axis=0),
            inputs_at(problem, "bob", ib))
