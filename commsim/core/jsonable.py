"""Values as JSON: numpy scalars and arrays, objects with ``to_dict``, and integers too large for a float
(written as decimal strings, so an exact size such as 2^99 survives a JSON reader)."""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """numpy scalars/arrays, dataclass-like objects and huge ints made JSON-safe."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, np.integer):
        obj = int(obj)
    if isinstance(obj, int):
        return obj if abs(obj) < 2 ** 53 else str(obj)
    if isinstance(obj, np.floating):
        obj = float(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    return obj


def to_json(obj: Any, indent: int | None = 2) -> str:
    """``obj`` as a JSON text (see :func:`to_jsonable`)."""
    return json.dumps(to_jsonable(obj), indent=indent)
