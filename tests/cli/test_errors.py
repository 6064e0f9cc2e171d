"""Bad input exits 2 and an internal fault exits 1, each with one line; library errors name parameters and
the command line shows the flag the user typed."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_main

import commsim.cli.run as run_cli
from commsim.cli import cli
from commsim.cli.flags import flag_message, flags_of
from commsim.core.bits import BitsError
from commsim.core.errors import (
    CommsimError,
    InputError,
    InternalError,
    ModelError,
    NotApplicable,
    ProblemInputError,
)
from commsim.core.party import ProtocolError
from commsim.core.runner import DeadlockError
from commsim.runs.stages import prepare


# ---- the hierarchy -----------------------------------------------------------------------------------------
def test_bad_input_and_internal_faults_are_separate_branches():
    for cls in (NotApplicable, ModelError, ProblemInputError):
        assert issubclass(cls, InputError) and not issubclass(cls, InternalError)
    for cls in (ProtocolError, DeadlockError):
        assert issubclass(cls, InternalError) and not issubclass(cls, InputError)
    assert issubclass(InputError, CommsimError) and issubclass(InternalError, CommsimError)
    assert issubclass(InputError, ValueError) and issubclass(InternalError, RuntimeError)   # plain Python still works
    assert InputError("n must be at least 1, got 0", "n").param == "n"
    assert issubclass(BitsError, CommsimError)
    assert issubclass(BitsError, InternalError) and not issubclass(BitsError, InputError)  # codecs fed by commsim


# ---- parameter -> flag ---------------------------------------------------------------------------------------
def test_each_command_maps_its_parameters_to_its_flags():
    run = flags_of(cli.commands["run"])
    assert (run["n"], run["model"], run["model_spec"], run["instances"], run["reduction"]) == \
        ("--n", "--model", "--model", "--instances", "REDUCTION")
    budget = flags_of(cli.commands["budget"])
    assert budget["n_range"] == budget["n-range"] == "--n-range" and budget["task"] == "--reduction"
    assert flags_of(cli.commands["teach"])["topic"] == "TOPIC" and flags_of(cli.commands["teach"])["format"] == "--format"
    assert flags_of(cli.commands["tree"])["dot"] == "--dot" and flags_of(None) == {}


@pytest.mark.parametrize("message,param,flags,shown", [
    ("n must be at least 1, got 0", "n", {"n": "--n"}, "--n must be at least 1, got 0"),
    ("n = 40: the INEQ trie would have 2^41 states", "n", {"n": "--n"}, "--n = 40: the INEQ trie would have 2^41 states"),
    ("unknown reduction 'x'; known: a", "reduction", {"reduction": "REDUCTION"},
     "REDUCTION: unknown reduction 'x'; known: a"),
    ("model spec 'elman:q': 'q' is not key=value", "model", {"model": "--model"},
     "--model: model spec 'elman:q': 'q' is not key=value"),
    ("width must be at least 1, got 0", "width", {"n": "--n"}, "width must be at least 1, got 0"),   # no such flag
    ("--n must be at least 1, got 0", "--n", {"n": "--n"}, "--n must be at least 1, got 0"),     # the old form
    ("unknown topic 'x'", "TOPIC", {}, "TOPIC: unknown topic 'x'"),
    ("nothing to name", None, {"n": "--n"}, "nothing to name"),
])
def test_flag_message(message, param, flags, shown):
    assert flag_message(message, param, flags) == shown


@pytest.mark.parametrize("args,first_words", [
    (["run", "index-idxl", "--n", "0"], "Error: --n must be at least 1"),
    (["run", "no-such-reduction"], "Error: REDUCTION: unknown reduction"),
    (["automaton", "ineq", "--n", "5"], "Error: --n must be an even length"),
    (["fooling", "eq", "--n", "13", "--verify"], "Error: --verify: the eq fooling set at n = 13"),
    (["tree", "eq", "--n", "9", "--protocol", "one-way"], "Error: --n = 9: "),
    (["cc", "dyck22", "--n", "4", "--protocol", "one-way"], "Error: PROBLEM must be a problem a registered protocol is for"),
    (["run", "eq-ineq", "--instances", "all", "--n", "21"], "Error: --instances: all 4398046511104 instances"),
])
def test_library_errors_are_shown_with_the_flag_typed(capsys, args, first_words):
    code, out, err = run_main(capsys, args)
    assert code == 2 and out == "" and err.startswith(first_words) and err.count("\n") == 1, err


@pytest.mark.parametrize("args,shown", [
    # commsim/spec.py: a key no factory reads
    (["run", "index-idxl", "--model", "elman:widht=4", "--n", "4"],
     "--model: model spec 'elman:widht=4': unknown key(s) widht for kind 'elman'"),
    # commsim/spec.py: frac without precision (once, not wrapped twice)
    (["run", "index-idxl", "--model", "elman:frac=3", "--n", "4"],
     "--model: model spec 'elman:frac=3': frac= needs precision="),
    # a construction's parameter
    (["run", "index-idxl", "--model", "construct:idxl:gamma=2", "--n", "4"],
     "--model: model spec 'construct:idxl:gamma=2': gamma must be in (0, 1), got 2.0"),
    # a model's own check at the task's length
    (["run", "index-idxl", "--model", "attention:query=9", "--n", "4"],
     "--model: query position 9 is outside a sequence of length 5"),
    # a reduction refusing a model
    (["run", "dyck22-fooling", "--model", "elman", "--n", "8"],
     "--model: dyck22-fooling does not apply to a recurrent model"),
    # memorize for a reduction without a memory layout
    (["run", "disj-match3", "--model", "memorize", "--n", "4"],
     "--model: memorize has no memory layout for disj-match3"),
    # a reduction's size
    (["run", "dyck22-fooling", "--n", "7"], "--n must be even for Dyck-(2,2)"),
    (["run", "disj-qsa", "--n", "30"], "--n is q for disj-qsa"),
    # a simulator refusing the reduction's split
    (["run", "disj-qsa", "--model", "elman", "--n", "4"], "REDUCTION: the hidden-state handoff"),
    # a separation's size
    (["separate", "idxl", "--n", "2", "--json"], "--n must be in 4..16384 for idxl, got 2"),
    (["separate", "dyck22", "--n", "7"], "--n must be even for dyck22"),
    (["separate", "dyck22", "--n", "12", "--instances", "all"], "--instances: all would enumerate 16777216 strings"),
    # a lesson's size
    (["teach", "attention-dyck", "--n", "3"], "--n must be an even number in 4..16 for attention-dyck (where it is N, the string length), got 3"),
])
def test_bad_input_from_every_layer_names_the_flag_typed(capsys, args, shown):
    code, out, err = run_main(capsys, args)
    assert code == 2 and err.startswith("Error: " + shown) and err.count("\n") == 1, err
    line = err[len("Error: "):].strip()
    if "--json" in args:
        assert json.loads(out) == {"error": line, "exit_code": 2}
    else:
        assert out == ""
    if "--json" not in args and args[0] in ("run", "separate"):   # the same line as JSON on request
        code, out, err = run_main(capsys, args + ["--json"])
        assert code == 2 and json.loads(out) == {"error": line, "exit_code": 2}


def test_a_missing_weights_file_names_the_model_flag(capsys, tmp_path):
    missing = tmp_path / "nope.npz"
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", f"elman:weights={missing}", "--n", "4",
                              "--json")
    assert code == 2 and json.loads(out)["error"] == (f"--model: model spec 'elman:weights={missing}': cannot read "
                                                      f"weights={str(missing)!r}: it does not exist")


_ROOT = Path(__file__).resolve().parents[2]
_LIBRARY = [p for root in ("commsim", "protocols") for p in sorted((_ROOT / root).rglob("*.py"))
            if p.relative_to(_ROOT / root).parts[0] != "cli"]
#: sites known to still name a flag, in files being edited elsewhere: each must still be there (else drop it)
_FLAG = re.compile(r"(^|[\s(`'])--[a-z]")


def _raised_with_a_flag(path: Path) -> list[str]:
    """The error constructions in ``path`` that pass a flag (``"--n"``) or an argument name (``"REDUCTION"``)
    as ``param``, or whose message names a flag."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if not (name.endswith("Error") or name == "NotApplicable"):
            continue
        params = node.args[1:] + [k.value for k in node.keywords if k.arg == "param"]
        texts = [c.value for arg in node.args[:1] for c in ast.walk(arg)
                 if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        flag_param = any(isinstance(p, ast.Constant) and (str(p.value).startswith("-") or str(p.value).isupper())
                         for p in params)
        if flag_param or any(_FLAG.search(t) for t in texts):
            found.append(f"{path.relative_to(_ROOT)}:{node.lineno}")
    return found


def test_no_library_error_names_a_command_line_flag():
    """Library errors name parameters (``param="n"``); only commsim/cli knows the flags."""
    assert len(_LIBRARY) > 50 and not any("/commsim/cli/" in str(p) for p in _LIBRARY)
    assert _raised_with_a_flag(_ROOT / "commsim" / "cli" / "common.py")  # the scan does find flags
    offenders = [hit for path in _LIBRARY for hit in _raised_with_a_flag(path)]
    assert offenders == [], "library errors that name a command-line flag (name the parameter instead)"


def test_an_internal_codec_fault_exits_1(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise BitsError("value 9 does not fit in 3 bits")
    monkeypatch.setattr(run_cli, "run_reduction", broken)
    code, out, err = run_main(capsys, "run", "index-idxl")
    assert code == 1 and err.startswith("Error: internal error: BitsError: value 9 does not fit in 3 bits")


def test_library_errors_name_the_parameter_not_the_flag():
    with pytest.raises(InputError) as err:
        prepare("index-idxl", None, 0)
    assert err.value.param == "n" and str(err.value).startswith("n must") and "--" not in str(err.value)


# ---- exit codes ----------------------------------------------------------------------------------------------
def test_an_internal_fault_exits_1_with_one_line(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ProtocolError("rnn-handoff: the batch run disagrees with the runner on instance 3")
    monkeypatch.setattr(run_cli, "run_reduction", broken)
    code, out, err = run_main(capsys, "run", "index-idxl")
    assert code == 1 and out == ""
    assert err.startswith("Error: internal error: ProtocolError: rnn-handoff: the batch run disagrees")
    assert err.count("\n") == 1 and "Traceback" not in err
    code, out, err = run_main(capsys, "run", "index-idxl", "--json")
    assert code == 1 and json.loads(out) == {"error": err[len("Error: "):].strip(), "exit_code": 1}


def test_a_lying_simulator_is_an_internal_fault_end_to_end(capsys, monkeypatch):
    setup = prepare("index-idxl", "memorize:capacity=4", 4)
    real = type(setup.simulator).run_batch

    def lying_batch(self, model, encoded, progress=None):
        batch = real(self, model, encoded, progress)
        batch.rounds = np.asarray(batch.rounds) + 1
        return batch
    monkeypatch.setattr(type(setup.simulator), "run_batch", lying_batch)
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", "memorize:capacity=4", "--n", "4")
    assert code == 1 and "internal error: ProtocolError" in err and "disagrees with the runner" in err
    assert err.count("\n") == 1


def test_an_internal_fault_shows_its_traceback_on_request(monkeypatch):
    def broken(*args, **kwargs):
        raise InternalError("invariant broken")
    monkeypatch.setattr(run_cli, "run_reduction", broken)
    monkeypatch.setenv("COMMSIM_DEBUG", "1")
    with pytest.raises(InternalError, match="invariant broken"):
        from commsim.cli import main
        main(["run", "index-idxl"])


def test_bad_input_raised_anywhere_in_a_command_exits_2(capsys, monkeypatch):
    def refuse(*args, **kwargs):
        raise ModelError("weights file 'w.npz' does not exist", "model")
    monkeypatch.setattr(run_cli, "run_reduction", refuse)
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", "elman:weights=w.npz")
    assert code == 2 and err == "Error: --model: weights file 'w.npz' does not exist\n"
