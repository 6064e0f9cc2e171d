"""One run of a reduction (pictured in :mod:`commsim.runs.run`): the public stages, ``run_reduction`` that composes
them, the tally, certificates, the report and its verdict, streamed exhaustive shards, and plain communication
protocols (``cc``)."""
