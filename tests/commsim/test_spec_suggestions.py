"""A misspelled name on the command line gets the closest valid one suggested (difflib, as click does for
options) and the valid ones listed: a reduction, a model kind, a spec key.  A path in a spec whose name holds
``=`` (``hf-gpt2:/models/lr=0.1``) is the spec's target, not a key=value pair."""
from __future__ import annotations

import pytest

from commsim.cli import main
from commsim.core.errors import InputError
from commsim.spec import ModelSpec, did_you_mean


def _cli(args, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    return done.value.code, " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("args,suggested,listed", [
    (["run", "index-idl"], "'index-idxl'", "known: compose-index"),
    (["run", "index-idxl", "--model", "lstm:widht=4"], "'width'", "its keys: "),
    (["run", "index-idxl", "--model", "elman:precison=8"], "'precision'", "its keys: "),
    (["run", "index-idxl", "--model", "lstmm:width=4"], "'lstm'", "known kinds: "),
    (["replicate", "bhbk24-indx"], "'bhbk24-index'", "known: "),
])
def test_a_misspelled_name_gets_the_closest_suggested_and_the_valid_ones_listed(capsys, args, suggested, listed):
    code, err = _cli(args, capsys)
    assert code == 2, err
    assert f"(did you mean {suggested}?)" in err and listed in err, err


def test_the_spec_keys_listed_are_those_the_kind_reads(capsys):
    code, err = _cli(["run", "index-idxl", "--model", "lstm:widht=4"], capsys)
    keys = err.split("its keys: ", 1)[1].split(", ")
    assert {"width", "precision", "frac", "dtype", "seed"} <= set(keys) and "widht" not in keys, err
    code, err = _cli(["run", "index-idxl", "--model", "memorize:zzz=1"], capsys)
    assert code == 2 and "did you mean" not in err and "its keys: capacity" in err, err


def test_no_suggestion_when_nothing_is_close():
    assert did_you_mean("qqqq", ["index-idxl", "eq-ineq"]) == ""
    assert did_you_mean("eq-inq", ["index-idxl", "eq-ineq"]) == " (did you mean 'eq-ineq'?)"


@pytest.mark.parametrize("target", ["/models/lr=0.1", "~/runs/a=b", "./a=b", "runs/x=1/y"])
def test_a_path_holding_an_equals_sign_is_the_target(target):
    spec = ModelSpec.parse(f"hf-gpt2:{target}:precision=8", ["hf-gpt2"])
    assert spec.target == target and spec.params == {"precision": "8"}
    assert ModelSpec.parse(f"torch:{target}", ["torch"]).target == target


def test_key_value_pairs_still_parse():
    spec = ModelSpec.parse("elman:width=4,precision=8", ["elman"])
    assert spec.params == {"width": "4", "precision": "8"} and spec.segments == ""
    with pytest.raises(InputError, match="not key=value"):
        spec = ModelSpec.parse("elman:=4", ["elman"])
        spec.finish()


def test_a_directory_named_with_an_equals_sign_is_read_as_a_directory(tmp_path, capsys):
    directory = tmp_path / "lr=0.1"
    directory.mkdir()
    code, err = _cli(["run", "index-idxl", "--model", f"hf-gpt2:{directory}"], capsys)
    assert code == 2 and "unknown key" not in err and "config.json" in err and "does not exist" in err, err


def test_a_relative_directory_named_with_an_equals_sign_is_read_as_the_directory(tmp_path, capsys, monkeypatch):
    (tmp_path / "a=b").mkdir()
    monkeypatch.chdir(tmp_path)
    code, err = _cli(["run", "index-idxl", "--model", "hf-gpt2:a=b"], capsys)
    assert code == 2 and "'a=b/config.json'" in err and "does not exist" in err, err   # the directory, not a key
