"""Protocol trees: every input through the runner, leaves checked as (monochromatic) rectangles."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from commsim.core.bits import Bits
from commsim.core.errors import InputError
from commsim.core.party import Receive, Send
from commsim.runs.cc import CommunicationProtocol, run_cc
from commsim.theory.fooling import cross, fooling_set
from commsim.theory.protocol_tree import (
    MAX_TREE_PAIRS,
    build_protocol_tree,
    largest_tree_n,
)
from protocols.baseline import BobSendsIndex, SendEverything


class FirstBitOnly(CommunicationProtocol):
    """A wrong EQ protocol: Alice sends only her first bit; Bob compares it with his."""

    name = "first-bit"
    problems = ("eq",)

    def alice(self, a):
        yield Send("first", Bits.from_array(a[:1]))

    def bob(self, b):
        first = (yield Receive("first")).to_array()
        return int(first[0] == b[0])


class TwoRounds(CommunicationProtocol):
    """A correct two-way EQ protocol with a Bob reply: Alice sends a, Bob replies with the answer bit."""

    name = "two-rounds"
    problems = ("eq", "disj")
    output_party = "alice"

    def alice(self, a):
        yield Send("input", Bits.from_array(a))
        return (yield Receive("answer"))[0]

    def bob(self, b):
        a = (yield Receive("input")).to_array()
        yield Send("answer", Bits.from_array([self.problem.evaluate(a, b)]))


class SharedStateCheat(CommunicationProtocol):
    """Breaks isolation: Alice leaves her input on the protocol object and Bob reads it (0 bits sent)."""

    name = "cheat"
    problems = ("eq",)

    def alice(self, a):
        self.stash = np.array(a)
        return 0
        yield  # a generator that sends nothing

    def bob(self, b):
        return int(np.array_equal(self.stash, b))
        yield


def brute_rectangle(pairs) -> bool:
    rows = {i for i, _ in pairs}
    cols = {j for _, j in pairs}
    return set(pairs) == set(itertools.product(rows, cols))


@pytest.mark.parametrize("name,n,protocol", [("index", 3, SendEverything), ("index", 4, BobSendsIndex),
                                             ("eq", 3, SendEverything), ("disj", 3, SendEverything),
                                             ("eq", 3, TwoRounds), ("disj", 2, TwoRounds)])
def test_correct_protocols_give_monochromatic_rectangles(name, n, protocol):
    tree = build_protocol_tree(name, n, protocol)
    assert tree.all_rectangles and tree.all_monochromatic and tree.correct and tree.well_formed
    assert tree.depth == run_cc(name, n, protocol).bits_used        # depth = worst-case bits
    for leaf in tree.transcript_leaves + tree.output_leaves:
        assert leaf.is_rectangle and leaf.size == len(leaf.rows) * len(leaf.cols)
        assert tree.graph.nodes[leaf.node]["kind"] in ("leaf", "output")
    assert sum(leaf.size for leaf in tree.transcript_leaves) == tree.pairs_run
    assert sum(leaf.size for leaf in tree.output_leaves) == tree.pairs_run
    assert tree.graph.nodes[()]["inputs"] == tree.pairs_run
    # every path's bits add up along the edges
    for u, v, data in tree.graph.edges(data=True):
        assert tree.graph.nodes[v]["bits"] == tree.graph.nodes[u]["bits"] + data["length"]


def test_leaf_input_sets_match_the_transcripts_brute_force():
    from commsim.core.runner import run_protocol
    from commsim.theory.problems import make_problem
    problem = make_problem("index", 3)
    proto = BobSendsIndex(problem)
    tree = build_protocol_tree("index", 3, BobSendsIndex)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    by_transcript = {}
    for i, j in itertools.product(range(len(A)), range(len(B))):
        t = run_protocol(proto, A[i], int(B[j])).transcript
        key = tuple((m.sender, m.label, str(m.bits)) for m in t.messages)
        by_transcript.setdefault(key, set()).add((i, j))
    assert {leaf.node for leaf in tree.transcript_leaves} == set(by_transcript)
    for leaf in tree.transcript_leaves:
        pairs = by_transcript[leaf.node]
        assert leaf.size == len(pairs) and brute_rectangle(sorted(pairs))
        assert set(leaf.rows.tolist()) == {i for i, _ in pairs}


def test_index_trees_show_one_way_versus_two_way():
    one = build_protocol_tree("index", 4, SendEverything)
    two = build_protocol_tree("index", 4, BobSendsIndex)
    assert one.depth == 4 and len(one.transcript_leaves) == 16 and one.rounds == 1
    assert two.depth == 3 and two.rounds == 2                        # ceil(log2 4) + 1
    assert one.fooling_check["applies"] and one.fooling_check["separated"]
    assert one.fooling_check["distinct_leaves"] == 16
    assert not two.fooling_check["applies"]


def test_wrong_protocol_is_caught_and_crossing_certifies_it():
    tree = build_protocol_tree("eq", 3, FirstBitOnly)
    assert tree.all_rectangles                                       # the rectangle property still holds
    assert not tree.all_monochromatic and not tree.correct
    assert tree.depth == 1 < fooling_set("eq", 3).lower_bound.bits
    check = tree.fooling_check
    assert check["applies"] and not check["separated"] and check["distinct_leaves"] == 2
    i, j = check["collision"]
    crossed = cross(fooling_set("eq", 3), i, j)
    assert all(c.value == 0 for c in crossed)                        # but the protocol says 1 on one of them
    proto = FirstBitOnly(fooling_set("eq", 3).problem)
    from commsim.core.runner import run_protocol
    outputs = [run_protocol(proto, c.alice, c.bob).output for c in crossed]
    assert any(o != c.value for o, c in zip(outputs, crossed))


def test_dot_export():
    tree = build_protocol_tree("index", 2, BobSendsIndex)
    dot = tree.to_dot()
    assert dot.startswith("digraph protocol_tree {") and dot.rstrip().endswith("}")
    assert len(re.findall(r"^\s+n\d+ -> n\d+ ", dot, flags=re.M)) == tree.graph.number_of_edges()
    assert len(re.findall(r"^\s+n\d+ \[", dot, flags=re.M)) == tree.graph.number_of_nodes()
    assert 'label="B: index=0"' in dot and "ellipse" in dot
    assert dot.count('"') % 2 == 0


def test_registered_protocols_are_passed_in_and_limits():
    from commsim.plugins import load_plugins
    tree = build_protocol_tree("index", 3, load_plugins().get("cc-protocol", "two-way"))
    assert tree.protocol_name == "two-way" and tree.correct
    assert largest_tree_n("eq") == 6 and largest_tree_n("index") == 9 and largest_tree_n("dyck22") == 6
    with pytest.raises(InputError, match="largest n that runs is 6"):
        build_protocol_tree("eq", 7, SendEverything)
    with pytest.raises(InputError):
        build_protocol_tree("eq", 2, BobSendsIndex)                  # an INDEX-only protocol
    assert MAX_TREE_PAIRS == 1 << 13
    d = tree.to_dict()
    assert d["depth"] == d["bits_used"] == 3 and d["transcript_leaves"] == len(d["leaves"])
    assert np.all([leaf["is_rectangle"] for leaf in d["leaves"]])


def test_rectangle_check_catches_a_protocol_that_cheats_through_shared_state():
    tree = build_protocol_tree("eq", 3, SharedStateCheat)
    assert tree.depth == 0 and len(tree.transcript_leaves) == 1      # one empty transcript for all 64 inputs
    assert tree.correct and tree.all_monochromatic                   # right answers...
    assert not tree.all_rectangles                                   # ...on sets no protocol can produce
    bad = [leaf for leaf in tree.output_leaves if not leaf.is_rectangle]
    assert {leaf.size for leaf in bad} == {8, 56}                    # the diagonal and its complement
    assert not tree.fooling_check["separated"]
