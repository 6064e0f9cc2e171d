"""[BHBK24]'s experiments at CPU scale (``commsim replicate``): data generation (:mod:`.data`), the trained
models (:mod:`.nets`), training (:mod:`.train`), the bounds on a trained model (:mod:`.bounds`) and the
experiments themselves (:mod:`.bhbk24`), registered as the ``experiment`` kind.  torch is imported only when a
cell runs."""
from __future__ import annotations

from protocols.experiments.bhbk24 import register

__all__ = ["register"]
