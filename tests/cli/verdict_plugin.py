"""A test plugin: index lookup whose reduction states only the two-way bound, so a protocol in which only
Bob speaks (Theorem 1's layer, ``construct:idxl``) has no bound that applies -- the ``bound_does_not_apply``
verdict on a real run (``--plugin verdict_plugin``)."""
from __future__ import annotations

from protocols.reductions.index import IndexLookup


class TwoWayOnlyIndexLookup(IndexLookup):
    """INDEX -> index lookup, with no one-way bound for Bob's side: only the two-way one (not applicable)."""

    id = "index-idxl-two-way-only"
    description = "index lookup stating only the two-way bound (a test plugin)"

    def bob_one_way_bound(self, n, one_way):
        return self.two_way_bound(n, one_way)

    def model_context(self, n):
        """The same encoding as index-idxl, so its constructions (construct:idxl) read it."""
        return {**super().model_context(n), "reduction": IndexLookup.id}


def register(registry) -> None:
    registry.register("reduction", TwoWayOnlyIndexLookup.id, TwoWayOnlyIndexLookup(), TwoWayOnlyIndexLookup.description)
