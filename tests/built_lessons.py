"""Each lesson built once per test process, shared by the tests that only read it.

Building a lesson runs its protocols and searches (seconds for the attention topics), and several test modules
read the same lessons: they share one build here.  A test that edits a lesson builds its own."""
from __future__ import annotations

from commsim.plugins import load_plugins

_BUILT: dict = {}


def lesson(topic: str, n: int | None = None):
    """The topic's lesson at size ``n`` (None: its default), built on first use; the caller must not change it."""
    key = (topic, n)
    if key not in _BUILT:
        _BUILT[key] = load_plugins().get("topic", topic)(n)
    return _BUILT[key]
