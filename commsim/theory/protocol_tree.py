"""Protocol trees: a deterministic protocol run on every input, drawn as a tree (networkx DiGraph).

Every (x, y) pair of a small problem goes through the real runner
(:func:`commsim.core.runner.run_protocol`).  Nodes are keyed by the transcript prefix — the tuple of
messages ``(sender, label, bits)`` sent so far — and each edge is one message, labelled with its
sender, label and exact bits; a node's ``bits`` attribute counts the bits on its path, so the depth
of the tree in bits is the protocol's worst-case cost.

Leaves (complete transcripts) hold the set of inputs that produce them.  The rectangle property
(Kushilevitz and Nisan, ch. 1) says each such set is a combinatorial rectangle X' x Y'; this module checks
it instead of assuming it.  The protocol's answer is given by its output party, which knows the
transcript and its own input, so under each transcript leaf one child per answer ("output
leaves") splits the rectangle into sub-rectangles; each must be *monochromatic* — f constant on
it — for the protocol to be correct.  Fooling-set members must land in pairwise distinct leaves
(Fact 4 of [BHBK24]), which is checked too when the fooling set is small.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from commsim.core.digests import collision_groups
from commsim.core.limits import check_size, show_size
from commsim.core.runner import run_protocol
from commsim.theory.comm_matrix import input_text
from commsim.theory.fooling import check_problem_args, fooling_set
from commsim.theory.problems import Problem, make_problem

if TYPE_CHECKING:  # networkx is imported when a tree is built (it costs a quarter second at CLI start-up)
    import networkx as nx


#: most input pairs run through the runner to build one tree
MAX_TREE_PAIRS = 1 << 13


ROOT: tuple = ()


@dataclass(frozen=True)
class LeafCheck:
    """One leaf's input set: is it a rectangle, is f constant on it, is the protocol right on it."""

    node: tuple
    rows: np.ndarray           # Alice input indices in the leaf
    cols: np.ndarray           # Bob input indices in the leaf
    size: int                  # number of (x, y) pairs in the leaf
    is_rectangle: bool
    true_values: tuple[int, ...]
    outputs: tuple[Any, ...]

    @property
    def monochromatic(self) -> bool:
        return len(self.true_values) == 1

    @property
    def correct(self) -> bool:
        return self.monochromatic and len(self.outputs) == 1 and self.outputs[0] == self.true_values[0]


@dataclass
class ProtocolTree:
    """The tree of a protocol on every input of a small problem, with its checks.

    ``graph`` (networkx DiGraph) nodes: transcript prefixes (tuples of ``(sender, label, bits)``);
    attributes ``kind`` ("internal" / "leaf" / "output"), ``bits`` (bits on the path), ``owner``
    (who speaks next at an internal node), ``inputs`` (pair count).  Output leaves are keyed
    ``prefix + (("output", value),)`` and hang under their transcript leaf with a 0-bit edge.
    """

    problem: Problem
    protocol_name: str
    graph: nx.DiGraph
    transcript_leaves: list[LeafCheck]
    output_leaves: list[LeafCheck]
    pairs_run: int
    owner_conflicts: list[tuple] = field(default_factory=list)
    prefix_conflicts: list[tuple] = field(default_factory=list)
    fooling_check: dict | None = None

    @property
    def depth(self) -> int:
        """Worst-case bits: the largest number of bits on a root-to-leaf path."""
        return max((d["bits"] for _, d in self.graph.nodes(data=True)), default=0)

    @property
    def rounds(self) -> int:
        return max((len(node) for node in self.graph.nodes if node and node[-1][0] != "output"), default=0)

    @property
    def all_rectangles(self) -> bool:
        return all(leaf.is_rectangle for leaf in self.transcript_leaves + self.output_leaves)

    @property
    def all_monochromatic(self) -> bool:
        return all(leaf.monochromatic for leaf in self.output_leaves)

    @property
    def correct(self) -> bool:
        return all(leaf.correct for leaf in self.output_leaves)

    @property
    def well_formed(self) -> bool:
        """Who speaks next, and whether the protocol has ended, are determined by the transcript."""
        return not self.owner_conflicts and not self.prefix_conflicts

    def to_dict(self) -> dict:
        return {"problem": self.problem.name, "n": self.problem.n, "protocol": self.protocol_name,
                "pairs_run": self.pairs_run, "nodes": self.graph.number_of_nodes(),
                "transcript_leaves": len(self.transcript_leaves), "output_leaves": len(self.output_leaves),
                "depth": self.depth, "bits_used": self.depth, "rounds": self.rounds,
                "all_rectangles": self.all_rectangles, "all_monochromatic": self.all_monochromatic,
                "correct": self.correct, "well_formed": self.well_formed,
                "fooling_check": self.fooling_check,
                "leaves": [{"transcript": _path_text(leaf.node), "inputs": leaf.size,
                            "rectangle": f"{len(leaf.rows)} x {len(leaf.cols)}", "is_rectangle": leaf.is_rectangle,
                            "true_values": list(leaf.true_values), "outputs": [_plain(o) for o in leaf.outputs]}
                           for leaf in self.transcript_leaves[:64]]}

    def to_dot(self, max_inputs: int = 4) -> str:
        """The tree in Graphviz DOT (written directly; no pydot needed)."""
        ids = {node: f"n{i}" for i, node in enumerate(self.graph.nodes)}
        lines = ["digraph protocol_tree {", '  rankdir=TB;', '  node [fontname="monospace", fontsize=10];',
                 '  edge [fontname="monospace", fontsize=9];',
                 f'  label="{_dot_escape(self.protocol_name)} protocol for {self.problem.name}, n = {self.problem.n}: '
                 f'depth {self.depth} bits";']
        for node, data in self.graph.nodes(data=True):
            if data["kind"] == "internal":
                where = "root" if node == ROOT else f"after {data['bits']} bits"
                text = f"{where}\\n{data['owner']} speaks\\n{data['inputs']} inputs"
                attrs = 'shape=box'
            elif data["kind"] == "leaf":
                leaf = data["check"]
                text = (f"transcript leaf ({data['bits']} bits)\\n{len(leaf.rows)} x {len(leaf.cols)} rectangle"
                        f"{'' if leaf.is_rectangle else ' VIOLATED'}")
                attrs = 'shape=box, style=rounded'
            else:
                leaf = data["check"]
                xs = ", ".join(data["alice_text"][:max_inputs]) + (", ..." if len(data["alice_text"]) > max_inputs else "")
                ys = ", ".join(data["bob_text"][:max_inputs]) + (", ..." if len(data["bob_text"]) > max_inputs else "")
                verdict = "ok" if leaf.correct else ("not monochromatic" if not leaf.monochromatic else "WRONG")
                text = f"output {_plain(data['output'])} ({verdict})\\nX = {{{xs}}}\\nY = {{{ys}}}"
                attrs = 'shape=ellipse' + ('' if leaf.correct else ', color=red')
            lines.append(f'  {ids[node]} [{attrs}, label="{_dot_escape(text, keep_newlines=True)}"];')
        for u, v, data in self.graph.edges(data=True):
            if data["kind"] == "message":
                text = f"{'A' if data['sender'] == 'alice' else 'B'}: {data['label']}={data['bits'] or 'ε'}"
            else:
                text = f"{'A' if data['sender'] == 'alice' else 'B'} answers"
            lines.append(f'  {ids[u]} -> {ids[v]} [label="{_dot_escape(text)}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _dot_escape(text: str, keep_newlines: bool = False) -> str:
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    if keep_newlines:
        text = text.replace("\\\\n", "\\n")
    return text.replace("\n", "\\n")


def _path_text(node: tuple) -> str:
    return " | ".join(f"{'A' if m[0] == 'alice' else 'B'}:{m[1]}={m[2]}" for m in node) or "(empty)"


def _leaf_check(node, pairs: np.ndarray, values: np.ndarray, outputs: list) -> LeafCheck:
    rows, cols = np.unique(pairs[:, 0]), np.unique(pairs[:, 1])
    return LeafCheck(node, rows, cols, len(pairs), len(pairs) == len(rows) * len(cols),
                     tuple(sorted({int(v) for v in values})), tuple(sorted({_plain(o) for o in outputs}, key=repr)))


def _resolve_protocol(problem: Problem, protocol) -> tuple[Any, str]:
    """The protocol instance for ``problem`` (a class is built for it) and its name."""
    if isinstance(protocol, type):
        return protocol(problem), getattr(protocol, "name", protocol.__name__)
    return protocol, getattr(protocol, "name", type(protocol).__name__)


def largest_tree_n(problem_name: str, max_pairs: int = MAX_TREE_PAIRS) -> int:
    """The largest n whose every input pair can be run (at most ``max_pairs`` pairs)."""
    step = 2 if problem_name == "dyck22" else 1
    n = step
    while _pairs(problem_name, n + step) <= max_pairs:
        n += step
    return n


def _pairs(problem_name: str, n: int) -> int:
    """Number of (x, y) input pairs of the problem at size n."""
    if problem_name == "index":
        return (1 << n) * n
    if problem_name in ("eq", "disj"):
        return 1 << (2 * n)
    return 4 ** n  # dyck22: (4^(N/2))^2


def build_protocol_tree(problem_name: str, n: int, protocol, *, max_pairs: int = MAX_TREE_PAIRS) -> ProtocolTree:
    """Run ``protocol`` (a protocol class, built for the problem, or an instance) on every input pair.

    The protocol is passed in: resolving a registered name is the caller's job (the command line does it).

    Returns the tree with its checks: each transcript leaf a rectangle, each output leaf a
    monochromatic rectangle, depth = worst-case bits, fooling-set members in distinct leaves.
    """
    n = check_problem_args(problem_name, n)
    # n against the largest n that fits, never the 2^(2n) pair count itself (n = 10^9 is refused at once)
    check_size(n, "n", 1, largest_tree_n(problem_name, max_pairs),
               f"every input pair is run one by one, at most {show_size(max_pairs)} pairs")
    problem = make_problem(problem_name, n)
    import networkx as nx

    proto, name = _resolve_protocol(problem, protocol)
    A, B = problem.alice_inputs(), problem.bob_inputs()
    truth = np.asarray(problem.evaluate_batch(np.repeat(A, len(B), axis=0),
                                              np.tile(B, (len(A),) + (1,) * (B.ndim - 1)))).reshape(len(A), len(B))

    graph = nx.DiGraph()
    graph.add_node(ROOT, kind="internal", bits=0, owner=None, inputs=0)
    owners: dict[tuple, set] = {}
    ended: dict[tuple, list] = {}
    leaf_of = np.empty((len(A), len(B)), dtype=object)
    for i in range(len(A)):
        for j in range(len(B)):
            bob = B[j].item() if B.ndim == 1 else B[j]
            result = run_protocol(proto, A[i], bob)
            node, bits = ROOT, 0
            graph.nodes[ROOT]["inputs"] += 1
            for m in result.transcript.messages:
                owners.setdefault(node, set()).add(m.sender)
                child = node + ((m.sender, m.label, str(m.bits)),)
                bits += len(m.bits)
                if child not in graph:
                    graph.add_node(child, kind="internal", bits=bits, owner=None, inputs=0)
                    graph.add_edge(node, child, kind="message", sender=m.sender, label=m.label, bits=str(m.bits),
                                   length=len(m.bits))
                graph.nodes[child]["inputs"] += 1
                node = child
            ended.setdefault(node, []).append((i, j, result.output))
            leaf_of[i, j] = node

    owner_conflicts = [node for node, who in owners.items() if len(who) > 1]
    prefix_conflicts = [node for node in ended if node in owners]
    transcript_leaves, output_leaves = [], []
    for node, runs in ended.items():
        pairs = np.array([(i, j) for i, j, _ in runs], dtype=np.int64)
        values = truth[pairs[:, 0], pairs[:, 1]]
        check = _leaf_check(node, pairs, values, [o for _, _, o in runs])
        transcript_leaves.append(check)
        graph.nodes[node].update(kind="leaf", check=check)
        by_output: dict = {}
        for i, j, out in runs:
            by_output.setdefault(_plain(out), []).append((i, j))
        for out, sub in sorted(by_output.items(), key=lambda kv: repr(kv[0])):
            sub = np.array(sub, dtype=np.int64)
            out_node = node + (("output", out),)
            out_check = _leaf_check(out_node, sub, truth[sub[:, 0], sub[:, 1]], [out])
            output_leaves.append(out_check)
            graph.add_node(out_node, kind="output", bits=graph.nodes[node]["bits"], owner=None, inputs=len(sub),
                           output=out, check=out_check,
                           alice_text=[input_text(problem, A[r]) for r in out_check.rows],
                           bob_text=[input_text(problem, B[c]) for c in out_check.cols])
            graph.add_edge(node, out_node, kind="answer", sender=proto.output_party, label="answer", bits="",
                           length=0)
    for node, who in owners.items():
        graph.nodes[node]["owner"] = "/".join(sorted(who))

    tree = ProtocolTree(problem, name, graph, transcript_leaves, output_leaves, len(A) * len(B),
                        owner_conflicts, prefix_conflicts)
    tree.fooling_check = _fooling_check(problem_name, int(n), problem, A, B, leaf_of)
    return tree


def _fooling_check(problem_name: str, n: int, problem: Problem, A: np.ndarray, B: np.ndarray, leaf_of) -> dict | None:
    """Do the fooling-set members land in pairwise distinct transcript leaves? (Fact 4 of [BHBK24])"""
    fs = fooling_set(problem_name, n)
    if fs.kind != "two-way":
        one_way = all(all(m[0] == "alice" for m in leaf_of[i, j]) for i in range(len(A)) for j in range(len(B)))
        if not one_way:
            return {"applies": False, "reason": f"the {problem_name} fooling set is one-way (all 2^n rows need "
                                                f"distinct messages); this protocol is two-way"}
        constant = all(leaf_of[i, j] == leaf_of[i, 0] for i in range(len(A)) for j in range(len(B)))
        groups = collision_groups([repr(leaf_of[i, 0]) for i in range(len(A))])
        clash = groups.first()
        return {"applies": True, "members": len(A), "distinct_leaves": groups.distinct,
                "separated": constant and clash is None, "collision": None if clash is None else list(clash),
                "bound_bits": fs.lower_bound.bits,
                "note": "one-way: Alice's message is the whole transcript and must differ for all 2^n inputs"}
    MA, MB = fs.pairs()
    row_index = {A[r].tobytes(): r for r in range(len(A))}
    col_index = {B[c].tobytes(): c for c in range(len(B))}
    leaves = [leaf_of[row_index[MA[k].tobytes()], col_index[MB[k].tobytes()]] for k in range(len(MA))]
    groups = collision_groups([repr(leaf) for leaf in leaves])
    clash = groups.first()
    return {"applies": True, "members": len(MA), "distinct_leaves": groups.distinct,
            "separated": clash is None, "collision": None if clash is None else list(clash),
            "bound_bits": fs.lower_bound.bits}
