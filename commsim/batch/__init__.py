"""Many runs: a sweep's grid and its cells, the resumable result table, and a paper's experiment replicated at a
chosen scale -- run on the executors of :mod:`commsim.core.executors`."""
