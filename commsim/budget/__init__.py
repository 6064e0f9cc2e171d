"""Bit budgets (``commsim budget``): what an architecture's protocol sends against a task's lower bound, the largest
sequence length N the bound does not rule out, the papers' own counts beside commsim's, and the inverse question
(``--solve``)."""
