"""Bad input exits 2 and an internal fault exits 1, each with one line; library errors name parameters and
the command line shows the flag the user typed."""
from __future__ import annotations

import json

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
from commsim.pipeline.stages import prepare


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


# ---- parameter -> flag ---------------------------------------------------------------------------------------
def test_each_command_maps_its_parameters_to_its_flags():
    run = flags_of(cli.commands["run"])
    assert (run["n"], run["model"], run["model_spec"], run["instances"], run["reduction"]) == \
        ("--n", "--model", "--model", "--instances", "REDUCTION")
    budget = flags_of(cli.commands["budget"])
    assert budget["n_range"] == budget["n-range"] == "--n-range" and budget["task"] == "--task"
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
    (["cc", "dyck22", "--n", "4", "--protocol", "one-way"], "Error: --protocol: protocol 'one-way' is for"),
    (["run", "eq-ineq", "--instances", "all", "--n", "13"], "Error: --instances: all 67108864 instances"),
])
def test_library_errors_are_shown_with_the_flag_typed(capsys, args, first_words):
    code, out, err = run_main(capsys, args)
    assert code == 2 and out == "" and err.startswith(first_words) and err.count("\n") == 1, err


def test_library_errors_name_the_parameter_not_the_flag():
    with pytest.raises(InputError) as err:
        prepare("index-idxl", None, 0)
    assert err.value.param == "n" and str(err.value).startswith("n must") and "--" not in str(err.value)


# ---- exit codes ----------------------------------------------------------------------------------------------
def test_an_internal_fault_exits_1_with_one_line(capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ProtocolError("rnn-handoff: the vectorized sweep disagrees with the runner on instance 3")
    monkeypatch.setattr(run_cli, "run_reduction", broken)
    code, out, err = run_main(capsys, "run", "index-idxl")
    assert code == 1 and out == ""
    assert err.startswith("Error: internal error: ProtocolError: rnn-handoff: the vectorized sweep disagrees")
    assert err.count("\n") == 1 and "Traceback" not in err
    code, out, err = run_main(capsys, "run", "index-idxl", "--json")
    assert code == 1 and json.loads(out) == {"error": err[len("Error: "):].strip(), "exit_code": 1}


def test_a_lying_simulator_is_an_internal_fault_end_to_end(capsys, monkeypatch):
    setup = prepare("index-idxl", "memorize:capacity=4", 4)
    real = type(setup.simulator).sweep

    def lying_sweep(self, model, encoded, progress=None):
        sweep = real(self, model, encoded, progress)
        sweep.rounds = np.asarray(sweep.rounds) + 1
        return sweep
    monkeypatch.setattr(type(setup.simulator), "sweep", lying_sweep)
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
