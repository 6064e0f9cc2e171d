"""The certificate searches stop at the first verified finding and say truthfully what they swept (issue: a
rectangle search swept all 4,194,304 members after a collision in the first two; a pigeonhole summary said
"searched all" and "stopped" at once)."""
from __future__ import annotations

import numpy as np

from commsim.certify.pigeonhole import collision_certificate
from commsim.certify.rectangle import rectangle_certificate
from commsim.theory.problems import Equality, Index


def _rank(A):
    return (A.astype(np.int64) << np.arange(A.shape[1] - 1, -1, -1)).sum(axis=1)


def test_rectangle_search_stops_at_the_first_collision_and_says_how_many_it_swept():
    problem = Equality(8)                          # the EQ fooling set {(x, x)}: 256 members, all answering 1
    ran = []

    def constant(A, B):                            # one transcript for every member
        ran.append(len(A))
        return np.ones(len(A), dtype=int), np.zeros((len(A), 1), dtype=np.int64)

    cert, searched = rectangle_certificate(problem, constant, lambda A, B: np.ones(len(A), dtype=int), chunk=4)
    assert cert.verified and (cert.details["member_1"]["index"], cert.details["member_2"]["index"]) == (0, 1)
    assert sum(ran) == cert.details["members_searched"] == 4           # one chunk: no member run twice
    assert searched == ("stopped at the first collision: fooling-set members 1 and 2 of 256 share a transcript "
                        "(4 of 256 members swept, 4 at a time; 1 distinct transcript among them)")


def test_rectangle_search_names_the_first_wrong_member_and_what_it_swept():
    problem = Equality(8)

    def wrong_on_member_6(A, B):
        return np.where(_rank(A) == 5, 0, 1), _rank(A)[:, None]

    cert, searched = rectangle_certificate(problem, wrong_on_member_6, lambda A, B: np.where(_rank(A) == 5, 0, 1),
                                           chunk=4)
    assert cert.kind == "error" and cert.verified and cert.details["members_searched"] == 8
    assert searched == ("stopped at the first wrong fooling-set member, member 6 of 256: the model is wrong on it "
                        "(8 of 256 members swept, 4 at a time)")


def test_rectangle_search_with_distinct_transcripts_sweeps_all():
    problem = Equality(8)
    cert, searched = rectangle_certificate(problem, lambda A, B: (np.ones(len(A), dtype=int), _rank(A)[:, None]),
                                           lambda A, B: np.ones(len(A), dtype=int), chunk=4)
    assert cert is None and searched.startswith("all 256 fooling-set members have distinct transcripts")


def test_pigeonhole_search_says_where_it_stopped_and_what_counting_forces():
    """INDEX_6 with a one-bit message (Alice's first bit): the first shard of 16 inputs already repeats."""
    problem = Index(6)
    cert, searched = collision_certificate(problem, lambda A, B=None: np.asarray(A)[:, :1].astype(np.int64),
                                           lambda A, B: np.asarray(A)[:, 0], message_bits=1, shard_size=16)
    assert cert.verified and cert.details["alice_inputs_searched"] == 16
    assert searched.startswith(
        "stopped at the first shard holding a verified repeat, after 16 of 64 Alice inputs (an exhaustive search of 2^6, in shards "
        "of 16): Alice's 1-bit messages (message) digested and compared bit for bit; these 16 inputs send only 1 "
        "distinct message; by pigeonhole any 2^1 + 1 = 3 inputs hold a repeat")
    assert "searched all" not in searched and "repeat(s)" not in searched   # main said both "all" and "stopped"
