"""The gated cells' update functions shared by commsim's own recurrent models and the torch adapters."""
from __future__ import annotations

import numpy as np

from commsim.contract import sigmoid


def gru_cell(a: np.ndarray, u: np.ndarray, h: np.ndarray, m: int) -> np.ndarray:
    """PyTorch's GRU update from the input part ``a = W_i x + b_i`` and the recurrent part
    ``u = W_h h + b_h`` (3m columns each, gates r, z, n): (1 - z) * n + z * h."""
    r = sigmoid(a[:, :m] + u[:, :m])
    z = sigmoid(a[:, m:2 * m] + u[:, m:2 * m])
    n = u[:, 2 * m:] * r
    n += a[:, 2 * m:]
    np.tanh(n, out=n)
    out = (1.0 - z) * n
    out += z * h
    return out
