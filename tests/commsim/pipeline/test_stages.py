"""The pipeline's public stages: run_reduction is their composition, cc shares the sweep-and-audit stage,
and one instance end to end (run_one_instance) agrees with the batch run."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from commsim.core.bits import Bits
from commsim.core.errors import InputError, InternalError, NotApplicable
from commsim.core.party import ProtocolError, Receive, Send
from commsim.runs import stages
from commsim.runs.cc import CommunicationProtocol, run_cc
from commsim.runs.run import run_reduction
from commsim.runs.stages import (
    MAX_EXHAUSTIVE_INSTANCES,
    RUNNER_CHECKS,
    BatchRun,
    Prepared,
    decode,
    direct_answers,
    encode_instances,
    prepare,
    run_one_instance,
    runner_checks,
    select_instances,
    simulate,
    sweep_and_audit,
)
from commsim.plugins import load_plugins
from commsim.theory.problems import make_problem


# ---- run_reduction is the composition of the stages -------------------------------------------------------
@pytest.mark.parametrize("rid,spec,n", [("index-idxl", "memorize:capacity=5", 6), ("eq-ineq", "lstm:width=2,precision=6", 4),
                                        ("dyck22-fooling", "attention:heads=1,width=2,precision=6,seed=1", 6)])
def test_the_report_is_made_of_the_stages_outputs(rid, spec, n):
    report = run_reduction(rid, spec, n, instances=200, seed=3)
    setup = prepare(rid, spec, n)
    chosen = select_instances(setup.problem, 200, 3)
    encoded = encode_instances(setup, chosen)
    sweep, audited = simulate(setup, encoded, seed=3)
    outcome = decode(setup, chosen, sweep)
    every = setup.problem.input_pairs <= 200   # a sample as large as the space runs each instance once
    assert report.instances_run == len(chosen.alice) == (setup.problem.input_pairs if every else 200)
    assert report.instances == chosen.described
    extra = setup.reduction.evaluation_sets(setup.problem, chosen.alice, chosen.bob, 3) \
        if hasattr(setup.reduction, "evaluation_sets") else []
    if not extra:   # the main set is the whole run
        assert report.bits_used == int(sweep.total_bits.max()) and report.runner_checked == audited.runner_checked
        assert report.model_accuracy == float(outcome.correct.mean())
        assert report.protocol_matches_model == bool(outcome.matches.all())
    else:           # Dyck membership: the language's other strings are judged too (worst bits, pooled accuracy)
        assert report.bits_used >= int(sweep.total_bits.max()) and report.runner_checked > audited.runner_checked
        assert next(iter(report.accuracy_by_set.values())) == float(outcome.correct.mean())   # the main set
        assert report.protocol_matches_model <= bool(outcome.matches.all())
    assert report.seq_len == encoded.seq_len and report.model == setup.model_name == spec
    assert report.transcript == audited.transcript and 0 < audited.transcript.total_bits <= report.bits_used


def test_prepare_builds_what_run_uses_and_refuses_bad_input():
    setup = prepare("index-idxl", "memorize:capacity=3", 4)
    assert setup.problem.n == 4 and setup.simulator.accepts(setup.model) and setup.model_name == "memorize:capacity=3"
    assert prepare(setup.reduction, setup.model, 4).model_name == "memorize:capacity=3"   # objects pass through
    with pytest.raises(InputError, match="n must be at least 1") as err:
        prepare("index-idxl", None, 0)
    assert err.value.param == "n"
    with pytest.raises(InputError) as err:
        prepare("no-such-reduction")
    assert err.value.param == "reduction"
    with pytest.raises(NotApplicable) as err:
        stages.simulator_for(object())
    assert err.value.param == "model"


def test_the_simulator_is_chosen_by_precedence_never_silently(monkeypatch):
    """Of the selectable simulators that accept a model, the lowest precedence wins and the choice is said;
    a tie is refused; a named simulator must accept the model; the streamed path keeps the name."""
    from commsim.plugins import load_plugins
    from protocols.simulators.rnn_handoff import RnnHandoff
    registry = load_plugins()
    setup = prepare("index-idxl", "memorize:capacity=3", 4)
    assert setup.simulator.name == "rnn-handoff" and setup.chosen == "by the model's kind"

    class Rival(RnnHandoff):
        name = "rnn-rival"
    rival = Rival()
    from commsim.plugins import Entry
    monkeypatch.setitem(registry._entries["simulator"], "rnn-rival", Entry("simulator", "rnn-rival", rival))
    with pytest.raises(InputError, match="same precedence") as err:
        stages.simulator_for(setup.model)
    assert err.value.param == "simulator"
    monkeypatch.setitem(registry._entries["simulator"], "rnn-rival",
                        Entry("simulator", "rnn-rival", rival, precedence=200))
    chosen, why = stages.simulator_for(setup.model)
    assert chosen.name == "rnn-handoff" and "over rnn-rival" in why
    named = prepare("index-idxl", "memorize:capacity=3", 4, simulator="rnn-rival")
    assert named.simulator is rival and named.chosen == "by name" and named.asked == "rnn-rival"
    report = run_reduction("index-idxl", "memorize:capacity=3", 4, simulator="rnn-rival")
    assert report.protocol == "rnn-rival" and report.to_dict()["simulator_choice"] == "by name"
    with pytest.raises(InputError, match="does not wrap") as err:
        prepare("index-idxl", "memorize:capacity=3", 4, simulator="attention-exchange")
    assert err.value.param == "simulator"


def test_all_instances_are_refused_beyond_the_exhaustive_limit():
    problem = make_problem("eq", 13)                                  # 2^26 pairs > 2^24
    assert problem.input_pairs > MAX_EXHAUSTIVE_INSTANCES
    with pytest.raises(InputError, match="too many to run exhaustively") as err:
        select_instances(problem, None, 0)
    assert err.value.param == "instances"
    A, B, described = select_instances(problem, 5, 1)                 # a sample is fine
    assert len(A) == len(B) == 5 and "seed 1" in described


# ---- one instance end to end ---------------------------------------------------------------------------
@pytest.mark.parametrize("rid,spec,n", [("index-idxl", "memorize:capacity=4", 5), ("eq-ineq", "elman:width=2,precision=5", 4),
                                        ("disj-match3", "attention:heads=1,width=2,precision=6,seed=0", 4)])
def test_one_instance_end_to_end_agrees_with_the_sweep(rid, spec, n):
    setup = prepare(rid, spec, n)
    chosen = select_instances(setup.problem, 12, 0)
    sweep, _ = simulate(setup, encode_instances(setup, chosen))
    answers = setup.reduction.decode(sweep.protocol_labels, chosen.bob)
    direct = direct_answers(setup, chosen.alice, chosen.bob)
    for i in range(12):
        one = run_one_instance(setup, chosen.alice[i], chosen.bob[i])
        t = one.result.transcript
        assert one.answer == answers[i] and one.direct_answer == direct[i]
        assert (t.bits_by_direction["alice_to_bob"], t.bits_by_direction["bob_to_alice"], t.rounds) == \
            (sweep.alice_to_bob[i], sweep.bob_to_alice[i], sweep.rounds[i])
        assert one.encoded.batch == 1


def test_one_instance_in_audit_mode_gives_the_same_transcript():
    setup = prepare("index-idxl", "memorize:capacity=4", 5)
    local = run_one_instance(setup, [1, 0, 1, 1, 0], 2)
    audited = run_one_instance(setup, [1, 0, 1, 1, 0], 2, audit=True)
    assert local.result.transcript == audited.result.transcript and local.answer == audited.answer == 1
    pieces = Prepared(setup.reduction, setup.problem, setup.model, setup.simulator)     # built from its parts
    assert run_one_instance(pieces, [1, 0, 1, 1, 0], 2).result.transcript == local.result.transcript


# ---- sweep and audit, shared by run and cc ------------------------------------------------------------------
class _Parity(CommunicationProtocol):
    """Alice sends the parity of her bits; Bob answers it (a 1-bit protocol for 'parity of a')."""

    name = "parity"
    problems = ("eq",)

    def alice(self, a):
        yield Send("parity", Bits.from_array(np.array([int(np.sum(a)) % 2])))

    def bob(self, b):
        bits = yield Receive("parity")
        return int(bits.to_array()[0])


def _shares(A, B):
    return lambda i: (A[i], B[i])


def test_without_a_batch_the_runner_gives_every_result():
    problem = make_problem("eq", 4)
    A, B, _ = select_instances(problem, None, 0)
    audited = sweep_and_audit(_Parity(problem), len(A), _shares(A, B), batch=None, read_output=int)
    assert audited.runner_checked == len(A) == 256
    assert np.array_equal(audited.run.outputs, A.sum(axis=1) % 2)
    assert set(audited.run.alice_to_bob.tolist()) == {1} and set(audited.run.rounds.tolist()) == {1}
    assert audited.transcript.total_bits == 1


def test_a_batch_is_checked_on_a_seeded_sample_and_must_agree():
    problem = make_problem("eq", 4)
    A, B, _ = select_instances(problem, None, 0)
    count = len(A)
    good = BatchRun(A.sum(axis=1) % 2, np.ones(count), np.zeros(count), np.ones(count))
    audited = sweep_and_audit(_Parity(problem), count, _shares(A, B), batch=good, read_output=int, seed=5)
    assert audited.runner_checked == RUNNER_CHECKS and audited.run is good
    assert np.array_equal(runner_checks(count, 5, every=False), runner_checks(count, 5, every=False))
    bad_outputs = good.outputs.copy()
    bad_outputs[runner_checks(count, 5, every=False)[3]] ^= 1
    with pytest.raises(ProtocolError, match="disagrees with the runner") as err:
        sweep_and_audit(_Parity(problem), count, _shares(A, B), batch=dataclasses.replace(good, outputs=bad_outputs),
                        read_output=int, seed=5)
    assert isinstance(err.value, InternalError) and not isinstance(err.value, InputError)   # a fault, not input


def test_cc_batch_path_and_runner_path_report_the_same():
    cls = load_plugins().get("cc-protocol", "two-way")
    batch = run_cc("index", 6, cls, seed=2)

    class NoBatch(cls):
        def run_batch(self, A, B):
            return None
    plain = run_cc("index", 6, NoBatch, seed=2)
    for key in ("instances_run", "bits_used", "bits_by_direction", "rounds", "correct", "errors"):
        assert getattr(batch, key) == getattr(plain, key), key
    assert batch.runner_checked == RUNNER_CHECKS and plain.runner_checked == plain.instances_run == 6 * 2 ** 6
    assert batch.transcript.total_bits == plain.transcript.total_bits == batch.bits_used


def test_run_fails_as_an_internal_fault_when_a_sweep_lies(monkeypatch):
    setup = prepare("index-idxl", "memorize:capacity=4", 4)
    real = type(setup.simulator).run_batch

    def lying_batch(self, model, encoded, progress=None):
        batch = real(self, model, encoded, progress)
        batch.alice_to_bob = np.asarray(batch.alice_to_bob) - 1        # claims one bit fewer than it sends
        return batch
    monkeypatch.setattr(type(setup.simulator), "run_batch", lying_batch)
    with pytest.raises(ProtocolError, match="disagrees with the runner"):
        run_reduction("index-idxl", "memorize:capacity=4", 4)
