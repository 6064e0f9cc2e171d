"""The Python API's table runs (``commsim.sweep``, ``commsim.replicate``) check their arguments the way
``commsim.run`` does, before anything runs: a wrong experiment, an unknown keyword (the closest suggested, the
valid ones listed), a ``progress``/``notify`` that is not a function, an ``out`` the writer would refuse -- each
an InputError naming the argument, never an AttributeError or TypeError from inside, never after a cell has
trained.  ``make_model``'s sizes are positive integers; an integer argument given as 8.0 is shown as 8.0."""
from __future__ import annotations

import os

import pytest

import commsim
from commsim import InputError

pytest.importorskip("pandas")

SWEEP = ("index-idxl", "memorize", 4)


def _refused(call, param: str, *words: str) -> str:
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.param == param, (caught.value.param, str(caught.value))
    for word in words:
        assert word in str(caught.value), str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("experiment", [None, 5, 2.5, b"bhbk24-index", ["bhbk24-index"]])
def test_replicate_names_a_wrong_experiment(experiment):
    _refused(lambda: commsim.replicate(experiment), "experiment", "experiment must be")


@pytest.mark.parametrize("call", ["sweep", "replicate"])
@pytest.mark.parametrize("key,value", [("progress", 5), ("progress", "yes"), ("notify", 5), ("notify", "warn"),
                                       ("write", 3)])
def test_callbacks_must_be_functions(call, key, value):
    run = (lambda: commsim.sweep(*SWEEP, **{key: value})) if call == "sweep" else \
        (lambda: commsim.replicate("bhbk24-index", **{key: value}))
    _refused(run, key, f"{key} must be a function")


@pytest.mark.parametrize("call", ["sweep", "replicate"])
def test_an_unknown_keyword_is_named_with_the_closest(call):
    if call == "sweep":
        message = _refused(lambda: commsim.sweep(*SWEEP, seed=1), "seed", "unknown keyword 'seed'")
        assert "did you mean 'seeds'?" in message and "valid keywords:" in message and "prune" in message
    else:
        message = _refused(lambda: commsim.replicate("bhbk24-index", worker=2), "worker",
                           "unknown keyword 'worker'")
        assert "did you mean 'workers'?" in message and "executor" in message
    _refused(lambda: getattr(commsim, call)(*(SWEEP if call == "sweep" else ("bhbk24-index",)), bogus=1), "bogus",
             "valid keywords:")


def test_run_keeps_naming_an_unknown_keyword():
    message = _refused(lambda: commsim.run("index-idxl", "memorize", n=4, instance=3), "instance")
    assert "did you mean 'instances'?" in message


@pytest.mark.parametrize("call", ["sweep", "replicate"])
def test_an_unwritable_out_is_refused_before_any_cell_runs(tmp_path, call):
    (tmp_path / "real.csv").write_text("")
    os.symlink(tmp_path / "real.csv", tmp_path / "link.csv")
    (tmp_path / "dir.csv").mkdir()
    ran = []

    def progress(done, total):       # called before the first cell, and after each
        ran.append(done)

    def start(out):
        if call == "sweep":
            return commsim.sweep(*SWEEP, out=out, progress=progress)
        return commsim.replicate("bhbk24-index", out=out, progress=progress)

    _refused(lambda: start(str(tmp_path / "link.csv")), "out", "symbolic link")
    _refused(lambda: start(tmp_path / "dir.csv"), "out", "a directory")
    _refused(lambda: start(str(tmp_path / "nowhere" / "t.csv")), "out", "does not exist")
    _refused(lambda: start(str(tmp_path / "t.txt")), "out", ".parquet, .csv or .json")
    _refused(lambda: start(5), "out", "table file name")
    assert ran == [] and (tmp_path / "real.csv").read_text() == ""


@pytest.mark.parametrize("value", [-1, 0, float("nan"), 2.0, True, "8"])
@pytest.mark.parametrize("key", ["vocab_size", "seq_len", "n"])
def test_make_model_sizes_are_positive_integers(key, value):
    _refused(lambda: commsim.make_model("elman:width=2", **{key: value}), key, key)


def test_a_float_given_for_an_integer_is_shown_as_given():
    message = _refused(lambda: commsim.run("index-idxl", "memorize", n=8.0), "n")
    assert message.endswith("got 8.0"), message
