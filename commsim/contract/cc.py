"""The base types of a ``cc-protocol`` plugin: a protocol for a source problem, deterministic or with coins and a
promise (``commsim cc`` runs them: :mod:`commsim.runs.cc`)."""
from __future__ import annotations

import numpy as np

from commsim.contract.values import BatchRun
from commsim.core.errors import InputError
from commsim.core.party import Protocol
from commsim.theory.bounds import LowerBound
from commsim.theory.problems import Problem


class CommunicationProtocol(Protocol):
    """A protocol for one source problem; subclasses set ``name``, ``problems`` and the party programs."""

    problems: tuple[str, ...] = ()
    description = ""
    #: "none" for a deterministic protocol; "public" or "private" for a randomized one (its coins)
    coins = "none"

    def __init__(self, problem: Problem):
        if problem.name not in self.problems:
            raise InputError(f"protocol {self.name!r} is for {', '.join(self.problems)}, not {problem.name!r}",
                             "protocol")
        self.problem = problem

    def run_batch(self, A: np.ndarray, B: np.ndarray) -> BatchRun | None:
        """Optional vectorized path (None: use the runner for every instance)."""
        return None


class RandomizedProtocol(CommunicationProtocol):
    """A protocol with coins and a promise: on every input, wrong with probability <= ``promised_error``.

    Subclasses set ``coins`` ("public" or "private"), ``may_err_on`` (the true answers on which it may
    err: ``(0,)`` for a one-sided EQ test that can only say "equal" wrongly), ``input_distribution`` (the
    sampled instances, described), and implement ``promised_error``, ``promise`` and the party programs;
    ``run_batch_coins`` is the optional vectorized path, which must draw the runner's coins
    (:func:`commsim.core.coins.coin_array` with the same seed and instance index)."""

    coins = "public"
    may_err_on: tuple[int, ...] = (0, 1)
    input_distribution = "the problem's sampler"
    #: the error asked for when ``--error`` is not given, and the range accepted
    default_error = 0.01
    error_range = (1e-9, 0.5)

    def __init__(self, problem: Problem, error: float | None = None):
        super().__init__(problem)
        error = self.default_error if error is None else error
        low, high = self.error_range
        if isinstance(error, bool) or not isinstance(error, (int, float)) or not low <= float(error) < high:
            raise InputError(f"error must be a number in [{low:g}, {high:g}) for {self.name}, got {error!r}", "error")
        self.error = float(error)

    @property
    def promised_error(self) -> float:  # pragma: no cover - abstract
        """The error probability the protocol guarantees on every input (over its coins), <= ``error``."""
        raise NotImplementedError

    @property
    def promise(self) -> str:  # pragma: no cover - abstract
        """The promise in words: why the error is at most ``promised_error``."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The sampled instances (default: the problem's sampler)."""
        return self.problem.sample(rng, count)

    def run_batch_coins(self, A: np.ndarray, B: np.ndarray, seed: int) -> BatchRun | None:
        """Optional vectorized path with instance i's coins from ``CoinSource(seed, i)``."""
        return None

    def randomized_bound(self) -> LowerBound | None:
        """The lower bound on protocols with this error (None when commsim states none)."""
        return None
