"""Sharded, streaming exhaustive sweeps (commsim.runs.shards) and the sharded collision search
(commsim.core.digests.digest_shard / merge_digest_shards, used by the pigeonhole certificate)."""
from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import commsim.runs.shards as shards_mod
from commsim.certify.pigeonhole import collision_certificate
from commsim.core.digests import digest_shard, merge_digest_shards, message_rows
from commsim.core.errors import InputError
from commsim.runs.run import run_reduction
from commsim.runs.shards import (ShardResult, merge_shards, merged_details, plan_shards, run_shard, run_sharded,
                                     run_streamed)
from commsim.runs.stages import RUNNER_CHECKS, prepare
from commsim.theory.problems import Equality, Index
from commsim.theory.ranks import inputs_at, pairs_at

MODEL = "elman:width=3,precision=4"
#: the fields of a merged result that must not depend on how the ranks were cut (the runner's sample and
#: the representative transcript it saw do)
SAME = ("start", "stop", "instances", "wrong", "first_wrong", "mismatches", "bits_used", "bits_rank",
        "alice_to_bob", "bob_to_alice", "rounds")


def _fields(result: ShardResult) -> dict:
    return {k: getattr(result, k) for k in SAME}


# ---- ranks -----------------------------------------------------------------------------------------------
@given(st.integers(1, 7), st.data())
@settings(max_examples=40, deadline=None)
def test_pairs_at_is_a_slice_of_all_pairs(n, data):
    for problem in (Index(n), Equality(min(n, 4))):
        A, B = problem.all_pairs()
        start = data.draw(st.integers(0, len(A)))
        stop = data.draw(st.integers(start, len(A)))
        a, b = pairs_at(problem, start, stop)
        assert np.array_equal(a, A[start:stop]) and np.array_equal(b, B[start:stop])


def test_inputs_at_large_n_without_listing():
    """Bit-string inputs come from their ranks: rank 2^40 + 5 at n = 48 is that number in binary."""
    row = inputs_at(Index(48), "alice", [(1 << 40) + 5])[0]
    assert int("".join(map(str, row.tolist())), 2) == (1 << 40) + 5


# ---- plan, run, merge ------------------------------------------------------------------------------------
def test_plan_covers_every_rank_once_and_spreads_the_runner_checks():
    planned = plan_shards("index-idxl", MODEL, 6, shard_size=50, chunk=12)
    assert planned[0].start == 0 and planned[-1].stop == 6 * 64
    assert all(a.stop == b.start for a, b in zip(planned, planned[1:]))
    assert all(s.chunk % 6 == 0 and s.size % 6 == 0 for s in planned[:-1])  # whole runs of one Alice input
    assert sum(s.checks for s in planned) == RUNNER_CHECKS
    assert pickle.loads(pickle.dumps(planned[1])) == planned[1]


@given(shard_size=st.integers(1, 200), chunk=st.integers(1, 90))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_sharded_equals_unsharded(shard_size, chunk):
    whole = run_sharded("index-idxl", MODEL, 6, shards=1, chunk=1 << 12)
    cut = run_sharded("index-idxl", MODEL, 6, shard_size=shard_size, chunk=chunk)
    assert _fields(cut) == _fields(whole)
    setup = prepare("index-idxl", MODEL, 6)
    mine, theirs = merged_details(setup, cut), merged_details(setup, whole)
    if min(chunk, shard_size) < 6:  # shorter than one Alice input's run: her message is computed more than once
        assert mine.pop("alice_prefix_runs") > theirs.pop("alice_prefix_runs")
    assert mine == theirs


def test_merge_is_order_free_and_refuses_gaps():
    planned = plan_shards("index-idxl", MODEL, 5, shard_size=40, chunk=20)
    results = [run_shard(s) for s in planned]
    assert _fields(merge_shards(results[::-1])) == _fields(merge_shards(results))
    with pytest.raises(InputError, match="tile"):
        merge_shards(results[:1] + results[2:])


def test_process_pool_map_gives_the_same_result():
    with ProcessPoolExecutor(2) as pool:
        remote = run_sharded("index-idxl", MODEL, 6, shard_size=96, chunk=48, map_fn=pool.map)
    local = run_sharded("index-idxl", MODEL, 6, shard_size=96, chunk=48)
    assert remote == local  # every field, the runner's sample and transcript too: same plan, same seeds


def test_streamed_report_equals_in_memory_report():
    """At n = 9 (4,608 instances): the streamed run reports what the in-memory run does."""
    for model in (MODEL, "elman:width=16,precision=16", "elman:width=2,precision=4"):  # the last: below the bound
        memory = run_reduction("index-idxl", model, 9).to_dict()
        streamed = run_streamed("index-idxl", model, 9, shard_size=1000, chunk=300).to_dict()
        assert streamed["details"].pop("streamed")["shards"] == 5
        for key in ("transcript", "runner_checked"):  # the runner's seeded sample differs (same size)
            memory.pop(key), streamed.pop(key)
        assert streamed == memory


def test_run_reduction_streams_beyond_the_in_memory_limit(monkeypatch):
    monkeypatch.setattr(shards_mod, "MAX_EXHAUSTIVE_INSTANCES", 100)
    report = run_reduction("index-idxl", MODEL, 5)
    assert report.details["streamed"]["peak_rss_bytes"] > 0
    assert report.instances_run == 5 * 32


def test_too_many_instances_are_refused_before_anything_runs():
    with pytest.raises(InputError, match="instances"):
        plan_shards("index-idxl", MODEL, 40)
    with pytest.raises(InputError, match="chunk"):
        plan_shards("index-idxl", MODEL, 8, chunk=0)
    with pytest.raises(InputError, match="in one process"):  # 28 * 2^28 instances: a cluster's work
        run_sharded("index-idxl", MODEL, 28)
    assert len(plan_shards("index-idxl", MODEL, 28, shards=3)) == 3  # which a cluster's map may take


# ---- sharded collision search -----------------------------------------------------------------------------
def _distinct_rows(count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64)[:, None].view(np.uint8).reshape(count, 8).copy()


@given(st.integers(2, 60), st.data())
@settings(max_examples=60, deadline=None)
def test_merge_finds_a_collision_that_spans_two_shards(count, data):
    """Two members in different shards, and no repeat inside any shard: only the merge can find them."""
    size = data.draw(st.integers(1, count - 1))
    i = data.draw(st.integers(0, count - 1))
    j = data.draw(st.integers(0, count - 1).filter(lambda j: j // size != i // size))
    i, j = min(i, j), max(i, j)
    rows = _distinct_rows(count)
    rows[j] = rows[i]
    chunk = data.draw(st.integers(1, 8))
    shards = [digest_shard(lambda lo, hi: rows[lo:hi], lo, min(lo + size, count), chunk)
              for lo in range(0, count, size)]
    assert all(not s.pairs for s in shards)
    assert merge_digest_shards(shards) == [(i, j)]


def test_pigeonhole_search_confirms_a_cross_shard_collision():
    """Alice inputs 3 and 200 of INDEX_8 send the same message; shards of 64 inputs: found in the merge,
    confirmed bit for bit and by the (honest, message-determined) forward."""
    problem = Index(8)
    table = _distinct_rows(256)
    table[200] = table[3]

    def code(A):
        return (np.asarray(A).astype(np.int64) << np.arange(7, -1, -1)).sum(axis=1)

    def messages(A, B=None):  # one-way: Bob's input plays no part
        return table[code(A)]

    def answers(A, B):  # Bob answers from the message alone: a_b of the first input with that message
        first = np.array([int(np.flatnonzero((table == table[c]).all(axis=1))[0]) for c in code(A)])
        return inputs_at(problem, "alice", first)[np.arange(len(A)), np.asarray(B)]

    cert, searched = collision_certificate(problem, messages, answers, message_bits=64, shard_size=64, chunk=16)
    assert cert is not None and cert.verified and cert.kind == "collision"
    assert sorted([cert.alice_input, cert.details["colliding_alice_input"]]) == \
        sorted(inputs_at(problem, "alice", [3, 200]).tolist())
    assert "merged across shards" in searched


def test_message_rows_still_split_messages():
    from commsim.core.bits import pack_uints
    rows = message_rows(pack_uints(np.arange(6), 12), 3)
    assert rows.shape == (3, 3)


@given(st.integers(0, 31), st.integers(0, 31), st.sampled_from([4, 8, 16]))
@settings(max_examples=40, deadline=None)
def test_rectangle_sweep_finds_a_collision_across_shards(i, j, shard_size):
    """EQ_5's fooling set (32 members): a protocol whose transcripts tell all members apart except i and j."""
    from commsim.certify.rectangle import sweep_fooling_set
    from commsim.theory.fooling import fooling_set
    fs = fooling_set("eq", 5)

    def evaluate(A, B):
        codes = (A.astype(np.int64) << np.arange(4, -1, -1)).sum(axis=1)
        codes[codes == max(i, j)] = min(i, j)
        return np.full(len(A), fs.value), codes[:, None]

    sweep = sweep_fooling_set(fs, evaluate, chunk=4, shard_size=shard_size, stop_at_collision=False)
    assert len(sweep.shards) == 32 // shard_size and sweep.swept == 32
    if i == j:
        assert sweep.first_collision() is None and sweep.distinct == 32
    else:
        assert sweep.first_collision() == (min(i, j), max(i, j)) and sweep.distinct == 31


@given(st.lists(st.integers(0, 40), min_size=1, max_size=256), st.booleans(), st.sampled_from([1, 4, 8]),
       st.sampled_from([4, 16, 64]), st.one_of(st.none(), st.integers(0, 255)))
@settings(max_examples=80, deadline=None)
def test_rectangle_sweep_stops_at_the_first_collision_with_the_same_collision(codes, distinct, chunk, shard_size,
                                                                               wrong):
    """EQ_8's fooling set (256 members) with transcripts drawn at random (and maybe one wrong member): the sweep
    that stops at the first collision or wrong member finds the first of them the full sweep finds, and sweeps no
    further than the shard holding it; with neither, it sweeps every member."""
    from commsim.certify.rectangle import sweep_fooling_set
    from commsim.theory.fooling import fooling_set
    fs = fooling_set("eq", 8)
    table = np.resize(np.asarray(codes, dtype=np.int64) * 256, 256) + np.arange(256) * distinct   # repeats or not
    ran = []

    def evaluate(A, B):
        rank = (A.astype(np.int64) << np.arange(7, -1, -1)).sum(axis=1)
        ran.extend(rank.tolist())
        answers = np.where(rank == wrong, 1 - fs.value, fs.value)
        return answers, table[rank][:, None]

    full = sweep_fooling_set(fs, evaluate, chunk=chunk, shard_size=shard_size, stop_at_error=False,
                             stop_at_collision=False)
    ran.clear()
    early = sweep_fooling_set(fs, evaluate, chunk=chunk, shard_size=shard_size)
    assert early.swept == len(ran) and ran == list(range(early.swept))   # members run in rank order, each once
    clash = full.first_collision()
    if early.wrong is not None:       # the wrong member came first: its chunk ends before a shard with a repeat
        assert (early.wrong, early.wrong_answer) == (full.wrong, full.wrong_answer)
        assert clash is None or clash[1] >= early.swept - shard_size
    elif clash is not None:           # the same first collision, in the shard of its second member
        assert early.first_collision() == clash and (full.wrong is None or full.wrong >= early.swept)
        assert clash[1] < early.swept <= max(2 * (clash[1] + 1), clash[1] + 1 + shard_size, chunk)
    else:                             # neither: every member swept
        assert full.wrong is None and early.swept == 256 and early.distinct == full.distinct


def test_a_streamed_run_carries_the_same_trust_signals_and_recheck_as_an_in_memory_one():
    """torch_agreement and the framework re-check of the certificate come from the same hooks on both paths."""
    torch = pytest.importorskip("torch")
    from commsim.plugins import make_model
    torch.manual_seed(0)
    parts = {"embedding": torch.nn.Embedding(8, 3), "core": torch.nn.GRU(3, 1, batch_first=True),
             "head": torch.nn.Linear(1, 2)}
    model = make_model(parts, vocab_size=8)
    memory = run_reduction("index-idxl", model, 6)
    streamed = run_streamed("index-idxl", model, 6, shard_size=100, chunk=50)
    assert streamed.torch_agreement is not None and streamed.torch_agreement["ok"] is None   # parts: not judged
    assert memory.torch_agreement["ok"] is None and memory.torch_agreement["note"] == streamed.torch_agreement["note"]
    assert streamed.torch_agreement["max_abs_diff"] == memory.torch_agreement["max_abs_diff"]
    assert streamed.certificate is not None and memory.certificate is not None
    assert "torch" in streamed.certificate.explanation and streamed.certificate.explanation == \
        memory.certificate.explanation


def test_a_streamed_report_says_what_is_checked_on_every_instance_and_on_a_sample():
    from protocols.simulators.rnn_handoff import CHECKED
    cut = run_sharded("index-idxl", MODEL, 5, shard_size=40, chunk=20)
    details = merged_details(prepare("index-idxl", MODEL, 5), cut)
    assert details["checked"] == CHECKED and set(CHECKED) == {"every_instance", "sample"}
    assert cut.runner_checked > 0
