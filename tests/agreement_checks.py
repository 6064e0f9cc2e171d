"""How tests read the one torch-agreement rule (:func:`protocols.adapters.torch.trust.judge`)."""
from __future__ import annotations

from protocols.adapters.torch.trust import NO_REFERENCE


def follows_parts(result: dict) -> bool:
    """A model built from parts (no module of the user's to compare with) follows the parts composed in
    torch: within the tolerance, and -- the parts not being shown to be the user's model -- not judged."""
    return (result["ok"] is None and result["note"].startswith(NO_REFERENCE)
            and 0 <= result["max_abs_diff"] <= result["max_allowed"])


def assert_trusted(report) -> None:
    """A run on a torch model is trusted: protocol = model bit for bit, and the module's own forward agrees
    within the documented tolerance on every instance the run compared (at most 256)."""
    assert report.protocol_matches_model
    agreed = report.torch_agreement
    assert agreed["framework"] == "torch" and agreed["ok"] is True, agreed
    assert agreed["max_abs_diff"] <= agreed["max_allowed"]
    assert agreed["instances"] == min(report.instances_run, 256)
