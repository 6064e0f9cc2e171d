"""Hostile text in every string field of a report, for the page-safety tests (tests/commsim/render, tests/html)."""
from __future__ import annotations


def inject(value, payload: str):
    """Every string inside ``value`` (dicts, lists) with ``payload`` appended; other values as they are."""
    if isinstance(value, str):
        return f"{value} {payload}"
    if isinstance(value, dict):
        return {k: inject(v, payload) for k, v in value.items()}
    if isinstance(value, list):
        return [inject(v, payload) for v in value]
    return value


class Injected:
    """A report whose ``to_dict`` has ``payload`` in every string field except the ``keep`` keys (numbers the page
    computes with); every other attribute is the report's."""

    def __init__(self, report, payload: str, keep=()):
        self._report, self._payload, self._keep = report, payload, keep

    def __getattr__(self, name):
        return getattr(self._report, name)

    def to_dict(self):
        return {k: v if k in self._keep else inject(v, self._payload) for k, v in self._report.to_dict().items()}
