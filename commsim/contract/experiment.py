"""A paper's experiment (registry kind ``experiment``, ``commsim replicate``): what it declares beside its cells, so
that the engine names none of its models or libraries.

The grid and the figures of a cell are the experiment's (:mod:`commsim.batch.replicate` lists ``name``, ``title``,
``source``, ``figure``, ``scales``, ``cells``, ``run_cell``, ``check``, ``claims``, ``bound_curve`` and
``ceiling_column``); this base adds how its rows are shown and what a row records about the libraries it ran on,
with defaults for an experiment that says nothing.
"""
from __future__ import annotations

#: the results table's columns when an experiment declares none: the cell's coordinates and its accuracy
DEFAULT_COLUMNS = ("model", "layers", "width", "N", "seed", "accuracy")


class Experiment:
    """The declarations of an experiment beyond its cells.

    ``legend``: model key (a cell's ``model``) -> (the name the figures and pages give it, its colour); a model it
    does not list is shown by its key, in grey.  ``columns``: the row columns the page's results table shows (those
    some row has), in order.  :meth:`provenance`: the columns every row gets about the libraries a cell ran on."""

    legend: dict[str, tuple[str, str]] = {}
    columns: tuple[str, ...] = DEFAULT_COLUMNS

    def provenance(self) -> dict:
        """The versions of the libraries the experiment's cells run on, as row columns (``{"torch_version": ...}``);
        none by default.  Called in the process that ran the cell."""
        return {}
