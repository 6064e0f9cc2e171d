"""The pipeline (pictured in :mod:`commsim.pipeline.run`): the plugin interfaces, the public stages, ``run_reduction`` that
composes them, plain communication protocols (``cc``), bit budgets and the report."""
