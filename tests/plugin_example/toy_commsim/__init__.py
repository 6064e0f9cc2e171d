"""A third-party commsim plugin, as docs/EXTENDING.md describes it: a model kind and its simulator
(``counter.py``) and a reduction (``reduction.py``), registered through the ``commsim.plugins`` entry point.

The model is a saturating counter -- a recurrent model whose whole state is one small integer -- and the task
is EQ_n laid out as ``x_1..x_n y_1..y_n``: "do the two halves hold the same number of ones?" is all a counter
can ask, so it is wrong on EQ, and commsim's certificate search shows where (two of Alice's inputs with the same
count).
"""


def register(registry) -> None:
    """The entry point: one model kind, one simulator, one reduction."""
    from toy_commsim.counter import COUNT_HANDOFF, counter_factory
    from toy_commsim.reduction import EqByCount
    registry.register("model", "counter", counter_factory,
                      "toy plugin: a counter of ones (+1 on Alice's half, -1 on Bob's); answers 1 iff it ends at 0")
    registry.register("simulator", COUNT_HANDOFF.name, COUNT_HANDOFF,
                      "toy plugin: Alice sends her count of ones, ceil(log2(n + 1)) bits, one-way", arch="counter")
    registry.register("reduction", EqByCount.id, EqByCount(), EqByCount.description)
