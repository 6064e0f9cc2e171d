"""``commsim cc`` with randomized protocols (--error), and ``commsim run``'s line on randomness."""
from __future__ import annotations

from cli_helpers import invoke, run_main


def test_fingerprint_command_of_the_issue():
    r = invoke("cc", "eq", "--n", "1024", "--protocol", "fingerprint", "--error", "0.01", "--instances", "10000",
               "--json")
    assert r["protocol"] == "fingerprint" and r["coins"] == "private" and r["instances_run"] == 10000
    assert r["bits_used"] == 34 and r["bits_by_direction"] == {"alice_to_bob": 34, "bob_to_alice": 0}
    assert 0 < r["error_promised"] <= 0.01                                # DESIGN section 4's names
    assert r["error_interval"][0] <= r["measured_error"] <= r["error_interval"][1]
    m = r["measured_error_detail"]
    assert m["trials"] == 10000 and m["rate"] == r["measured_error"] and m["method"] == "wilson"
    assert m["events"] == r["errors"] and r["consistent_with_promise"] is True
    assert r["measured_error_by_answer"]["1"]["events"] == 0 and r["may_err_on"] == [0]
    coins = r["transcript"]["coins"]
    assert coins and all(c["stream"] == "alice" for c in coins) and r["transcript"]["coin_bits"]["alice"] >= 17
    assert r["randomness_note"].startswith("EQ_n takes only O(log n)")


def test_same_seed_same_report_and_text_output():
    args = ["cc", "index", "--n", "64", "--protocol", "sample", "--error", "0.2", "--instances", "3000", "--seed", "3"]
    one, two = invoke(*args, "--json"), invoke(*args, "--json")
    assert one == two and one["transcript"]["coins"]
    assert one["randomized_bound"]["satisfied"] is True and one["bits_used"] == 39   # ceil(64 * 0.6)
    out = invoke(*args, "--transcript")
    assert "measured error" in out and "consistent with the promise" in out and "randomized bound" in out
    assert "coins (public, drawn by alice, window start" in out


def test_deterministic_protocols_refuse_an_error_target(capsys):
    code, out, err = run_main(capsys, "cc", "eq", "--n", "8", "--protocol", "one-way", "--error", "0.1")
    assert code == 2 and "error" in err and "deterministic" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_main(capsys, "cc", "eq", "--n", "8", "--protocol", "inner-product", "--error", "2")
    assert code == 2 and "error" in err


def test_run_says_whether_the_bound_survives_randomness():
    out = invoke("run", "eq-ineq", "--n", "4", "--no-certificate")
    assert "with coins" in out and "deterministic only" in out
    r = invoke("run", "disj-mqar", "--n", "4", "--no-certificate", "--json")
    assert r["bound_randomized"] is True and "Kalyanasundaram" in r["bound_randomized_note"]


def test_tree_refuses_a_protocol_with_coins(capsys):
    code, out, err = run_main(capsys, "tree", "eq", "--n", "3", "--protocol", "fingerprint")
    assert code == 2 and "--protocol 'fingerprint' flips coins" in err
