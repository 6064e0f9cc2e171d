"""The node-partition protocol of a graph transformer: the first multi-layer protocol ([SHT23]'s graph lower bound).

A graph transformer (:mod:`protocols.models.graph_attention`) reads the adjacency matrix X of a digraph, node
i's token being row i.  Partition the *nodes*: Alice holds the rows of hers, Bob the rows of his, and the rows of
the public nodes are known to both (the encoding lists their positions in ``Encoded.public_positions``).  Row i's
softmax reads only X_ij, node i's own query and every node's key and value, so per layer:

1. each party computes the keys and values of every node it owns (H heads, m numbers each) and sends them,
   p bits per number: Alice first, then Bob;
2. each party now knows every node's key and value (the public nodes' it computes itself: their states are
   functions of public rows and of what was exchanged), and finishes the softmax of its own rows and of the
   public rows, then the residual (or a root weight, a per-node linear map) and the MLP: the next states of its own
   and of the public nodes.  A row without edges reads only itself, so what an empty neighbourhood gives (uniform
   attention, or 0 for a message-passing sum over no edges) is computed by the row's owner too.

At the end each party sends one bit, the OR of its own nodes' decisions; Bob outputs the graph's label, the OR of
both bits and of the public nodes' decisions.  Bits = L·H·(owned nodes)·2m·p + 2, every message of the exact
width the plan gives; the parties compute with the model's own functions, so the protocol's states equal the
direct forward's bit for bit at every layer (``details["layers_exact"]``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from commsim import Bits, NotApplicable, Protocol, Receive, Send
from commsim.contract import (ANY_PARTITION, BatchResult, Encoded, MessagePlan, Shape, Simulator, Split, Vectorized,
                              pack_signed, unpack_signed)
from protocols.models.graph_attention import (
    GraphAttention,
    adjacency_rows,
    nodes_of_length,
)
from protocols.theorems import graph_exchange_bits, graph_exchange_text

__all__ = ["NodePartition", "node_partition", "GraphExchangeProtocol", "GraphExchange", "GRAPH_EXCHANGE",
           "simulate"]


@dataclass(frozen=True)
class NodePartition:
    """Who holds which node's row: Alice's, Bob's and the public nodes (sorted index arrays), of N."""

    nodes: int
    alice: np.ndarray
    bob: np.ndarray
    public: np.ndarray

    def owned(self, party: str) -> np.ndarray:
        """The nodes ``party`` owns (public ones aside)."""
        return self.alice if party == "alice" else self.bob

    @property
    def owned_count(self) -> int:
        """Nodes whose keys and values are sent (every non-public node)."""
        return len(self.alice) + len(self.bob)


def node_partition(seq_len: int, alice_positions, public_positions=()) -> NodePartition:
    """The node partition of an encoding of N^2 adjacency bits (token i·N + j = X_ij); NotApplicable when the
    length is not a square or a row is split between the parties (or only partly public)."""
    nodes = nodes_of_length(seq_len)
    if nodes is None:
        raise NotApplicable(f"graph-exchange reads N^2 adjacency bits (one row per node); {seq_len} tokens is no "
                            f"square", "reduction")

    def rows(positions, what):
        mask = np.zeros(nodes * nodes, dtype=bool)
        mask[np.asarray(list(positions), dtype=np.int64)] = True
        per_row = mask.reshape(nodes, nodes).sum(axis=1)
        split = np.flatnonzero((per_row > 0) & (per_row < nodes))
        if split.size:
            raise NotApplicable(f"graph-exchange partitions the nodes: row {int(split[0])} is split between "
                                f"{what} and the rest", "reduction")
        return per_row == nodes

    alice, public = rows(alice_positions, "Alice"), rows(public_positions, "the public positions")
    return NodePartition(nodes, np.flatnonzero(alice & ~public), np.flatnonzero(~alice & ~public),
                         np.flatnonzero(public))


def _layer_message_bits(owned: int, heads: int, width: int, precision: int) -> int:
    """One layer's message of a party owning ``owned`` nodes: each one's key and value, per head, p bits a number."""
    return int(owned) * int(heads) * 2 * int(width) * int(precision)


def _plan(nodes: int, alice: int, bob: int, public: int, shapes: list[tuple[int, int]],
          precision: int) -> MessagePlan:
    """The plan for layers of (heads, width) ``shapes`` when Alice owns ``alice`` of the N nodes, Bob ``bob``
    and ``public`` are public (counts only: ``commsim budget`` plans at any N)."""
    ab = sum(_layer_message_bits(alice, H, m, precision) for H, m in shapes) + 1
    ba = sum(_layer_message_bits(bob, H, m, precision) for H, m in shapes) + 1
    senders = [p for _ in shapes for p, k in (("alice", alice), ("bob", bob)) if k] + ["alice", "bob"]
    rounds = 1 + sum(1 for a, b in zip(senders, senders[1:]) if a != b)
    L = len(shapes)
    H, m = max(s[0] for s in shapes), max(s[1] for s in shapes)
    uniform = all(s == shapes[0] for s in shapes)
    formula = graph_exchange_bits(L, H, m, precision, alice + bob) if uniform else ab + ba
    text = (f"per layer and head the key and value of every owned node (Alice {alice}, Bob {bob}, public "
            f"{public} of {nodes} nodes), then one bit each: {ab} bits Alice -> Bob, {ba} bits Bob -> Alice")
    return MessagePlan(ab, ba, rounds, text, {"nodes": nodes, "layers": L, "public_nodes": public},
                       formula=formula,
                       formula_text=graph_exchange_text(L, H, m, precision, alice + bob) if uniform else
                       f"sum over layers of H·(owned nodes)·2m·p + 2 = {ab + ba}",
                       message_name="keys and values")


def _model_plan(model: GraphAttention, part: NodePartition) -> MessagePlan:
    return _plan(part.nodes, len(part.alice), len(part.bob), len(part.public),
                 [model.layer_shape(d) for d in range(model.num_layers)], model.precision)


def _public(split: Split):
    """The split's public positions (an empty ``range`` when there are none)."""
    public = split.public_positions
    return public if isinstance(public, range) or len(public) else range(0)


def _whole_rows(positions, nodes: int) -> int | None:
    """How many whole rows a ``range`` of positions with step 1 covers (None: not such a range, or rows split)."""
    if not isinstance(positions, range) or positions.step != 1:
        return None
    if positions.stop <= positions.start:
        return 0
    return (positions.stop - positions.start) // nodes if positions.start % nodes == 0 and \
        positions.stop % nodes == 0 else None


# ---- the party programs ---------------------------------------------------------------------------------
class GraphExchangeProtocol(Protocol):
    """Alice's and Bob's programs (module docstring); shares are :class:`~commsim.contract.Share`."""

    name = "graph-exchange"
    output_party = "bob"

    def __init__(self, model: GraphAttention, part: NodePartition):
        self.model, self.part = model, part

    def alice(self, share):
        return self._program("alice", share)

    def bob(self, share):
        return self._program("bob", share)

    def _rows(self, me: str, share) -> tuple[np.ndarray, np.ndarray]:
        """(the party's own rows, the public rows), each (1, k, N), from its share alone."""
        N = self.part.nodes
        known = np.full(N * N, -1, dtype=np.int64)
        known[np.asarray(share.positions, dtype=np.int64)] = np.asarray(share.tokens, dtype=np.int64)
        for pos, tok in share.public:
            known[pos] = tok
        X = known.reshape(N, N)
        own, pub = X[self.part.owned(me)], X[self.part.public]
        if (own < 0).any() or (pub < 0).any():   # pragma: no cover - node_partition guarantees whole rows
            raise NotApplicable("a party's share lacks a row it owns", "reduction")
        return own[None], pub[None]

    def _program(self, me: str, share):
        model, part, ar = self.model, self.part, self.model.arithmetic
        other = "bob" if me == "alice" else "alice"
        X_own, X_pub = self._rows(me, share)
        mine, theirs, pub = part.owned(me), part.owned(other), part.public
        h_own, h_pub = model.embed(X_own), model.embed(X_pub)
        for depth in range(model.num_layers):
            H, m = model.layer_shape(depth)
            K_own, V_own = model.keys_values(h_own, depth)
            K_pub, V_pub = model.keys_values(h_pub, depth)
            K = np.zeros((1, part.nodes, H, m), dtype=np.int64)
            V = np.zeros_like(K)
            K[:, mine], V[:, mine], K[:, pub], V[:, pub] = K_own, V_own, K_pub, V_pub
            message = pack_signed(np.concatenate([K_own.reshape(-1), V_own.reshape(-1)]), ar.p)
            steps = [("send", me), ("receive", other)] if me == "alice" else [("receive", other), ("send", me)]
            for step, who in steps:
                if not len(part.owned(who)):
                    continue
                label = f"layer {depth + 1}: keys and values of {who.capitalize()}'s nodes"
                if step == "send":
                    yield Send(label, message)
                else:
                    got = unpack_signed((yield Receive(label)), ar.p, 2 * len(theirs) * H * m)
                    half = len(theirs) * H * m
                    K[:, theirs] = got[:half].reshape(1, len(theirs), H, m)
                    V[:, theirs] = got[half:].reshape(1, len(theirs), H, m)
            h_own = model.attend_rows(h_own, X_own, K, V, depth)
            h_pub = model.attend_rows(h_pub, X_pub, K, V, depth)
        mine_or = int(model.node_labels(h_own).max(initial=0))
        public_or = int(model.node_labels(h_pub).max(initial=0))
        if me == "alice":
            yield Send("OR of Alice's nodes", Bits.from_array([mine_or]))
            yield Receive("OR of Bob's nodes")
            return None
        theirs_or = int((yield Receive("OR of Alice's nodes")).to_array()[0])
        yield Send("OR of Bob's nodes", Bits.from_array([mine_or]))
        label = np.array([mine_or | theirs_or | public_or], dtype=np.int64)
        return label, label


# ---- the batch: the same computation, vectorized over instances -------------------------------------------
def simulate(model: GraphAttention, part: NodePartition, X: np.ndarray):
    """The protocol on adjacency matrices X (B, N, N): (labels (B, 1), transcript keys (B, K), the states every
    layer as the parties hold them (L + 1 arrays (B, N, d))).  Each party's rows are computed from its own
    rows and the exchanged keys and values only; the keys are every message value in order."""
    B = X.shape[0]
    groups = {"alice": part.alice, "bob": part.bob, "public": part.public}
    h = {g: model.embed(X[:, idx]) for g, idx in groups.items()}
    layers = [_assemble(h, groups, B, part.nodes)]
    keys = []
    for depth in range(model.num_layers):
        H, m = model.layer_shape(depth)
        K = np.zeros((B, part.nodes, H, m), dtype=np.int64)
        V = np.zeros_like(K)
        for g, idx in groups.items():
            K[:, idx], V[:, idx] = model.keys_values(h[g], depth)
        for g in ("alice", "bob"):   # the messages, in the order they are sent
            idx = groups[g]
            keys += [K[:, idx].reshape(B, -1), V[:, idx].reshape(B, -1)]
        h = {g: model.attend_rows(h[g], X[:, idx], K, V, depth) for g, idx in groups.items()}
        layers.append(_assemble(h, groups, B, part.nodes))
    ors = {g: model.node_labels(h[g]).max(axis=1, initial=0) for g in groups}
    keys += [ors["alice"][:, None], ors["bob"][:, None]]
    labels = (ors["alice"] | ors["bob"] | ors["public"])[:, None]
    return labels.astype(np.int64), np.concatenate(keys, axis=1).astype(np.int64), layers


def _assemble(h: dict, groups: dict, B: int, nodes: int) -> np.ndarray:
    """Every node's state (B, N, d) from the groups' states (d: this layer's width)."""
    out = np.zeros((B, nodes, next(iter(h.values())).shape[-1]), dtype=np.int64)
    for g, idx in groups.items():
        out[:, idx] = h[g]
    return out


class GraphExchange(Vectorized, Simulator):
    """Graph transformers over a node partition (module docstring)."""

    name = "graph-exchange"
    source = "[SHT23] graph transformers (node-partition protocol; commsim's exact implementation)"
    partition_kind = ANY_PARTITION
    one_way_splits = ()
    budget_parameters = ("width", "precision", "heads")

    def accepts(self, model) -> bool:
        return isinstance(model, GraphAttention)

    def _part(self, model: GraphAttention, encoded: Encoded) -> NodePartition:
        if encoded.seq_len != model.seq_len:
            raise NotApplicable(f"the model reads digraphs on N = {model.nodes} nodes (N^2 = {model.seq_len} bits); "
                                f"the task has {encoded.seq_len} tokens", "model")
        if len(encoded.output_positions) != 1:
            raise NotApplicable("graph-exchange outputs one label per graph (the OR of the nodes' decisions); the "
                                f"task reads {len(encoded.output_positions)} outputs", "reduction")
        return node_partition(encoded.seq_len, encoded.alice_positions, encoded.public_positions)

    def plan_model(self, model: GraphAttention, encoded: Encoded) -> MessagePlan:
        return _model_plan(model, self._part(model, encoded))

    def plan(self, shape: Shape, split: Split) -> MessagePlan:
        """The plan for L = ``shape.extras["layers"]`` (default 1) layers of H heads of width m, p bits."""
        precision, seq_len = shape.precision, split.seq_len
        alice_positions, public_positions = split.alice_positions, _public(split)
        nodes, shapes = nodes_of_length(seq_len), [(int(shape.heads), int(shape.width))] * shape.extras.get("layers", 1)
        if nodes is not None:        # ranges of whole rows: counted without laying out N^2 positions (any N)
            alice, public = _whole_rows(alice_positions, nodes), _whole_rows(public_positions, nodes)
            if alice is not None and public is not None and (public == 0 or alice == 0 or (
                    alice_positions.stop <= public_positions.start or public_positions.stop <= alice_positions.start)):
                return _plan(nodes, alice, nodes - alice - public, public, shapes, int(precision))
        part = node_partition(seq_len, alice_positions, public_positions)
        return _plan(part.nodes, len(part.alice), len(part.bob), len(part.public), shapes, int(precision))

    def paper_count(self, shape: Shape, split: Split) -> tuple[int, str]:
        """L·H·(owned nodes)·2m·p + 2 at L = 1, the public nodes (the split's, whole rows) not owned:
        commsim's exact count of the node-partition protocol, the form in which [SHT23]'s LHm = Omega~(N) is
        proved (the public nodes are computed by both, never sent)."""
        width, precision, heads, seq_len = shape.width, shape.precision, shape.heads, split.seq_len
        public_positions = _public(split)
        nodes = nodes_of_length(seq_len) or 0
        public = _whole_rows(public_positions, nodes) if nodes else 0
        if public is None:
            public = len(node_partition(seq_len, range(0), public_positions).public)
        owned = nodes - public
        bits = graph_exchange_bits(1, heads, width, precision, owned)
        return bits, (graph_exchange_text(1, heads, width, precision, owned) + f" (L = 1; {owned} of the {nodes} "
                      f"nodes owned, {public} public; commsim's exact count of the node-partition protocol behind "
                      f"[SHT23]'s LHm = Omega~(N))")

    def protocol(self, model: GraphAttention, encoded: Encoded) -> GraphExchangeProtocol:
        return GraphExchangeProtocol(model, self._part(model, encoded))

    def transcript_keys(self, model: GraphAttention, encoded: Encoded):
        labels, keys, _ = simulate(model, self._part(model, encoded), adjacency_rows(encoded.tokens, model.nodes))
        return labels, keys

    def run_batch(self, model: GraphAttention, encoded: Encoded, progress=None) -> BatchResult:
        part = self._part(model, encoded)
        plan = _model_plan(model, part)
        X = adjacency_rows(encoded.tokens, model.nodes)
        labels, _, layers = simulate(model, part, X)
        direct_layers = model.states(X)
        layers_exact = np.stack([(a == b).all(axis=(1, 2)) for a, b in zip(layers, direct_layers)], axis=1)
        direct = model.node_labels(direct_layers[-1]).max(axis=1)[:, None]
        B = encoded.batch
        return BatchResult(labels, direct, layers_exact.all(axis=1) & (labels == direct).all(axis=1),
                           np.full(B, plan.alice_to_bob), np.full(B, plan.bob_to_alice), np.full(B, plan.rounds),
                           details={"layers_exact": int(layers_exact.all(axis=1).sum()),
                                    "alice_nodes": len(part.alice), "bob_nodes": len(part.bob),
                                    "public_nodes": len(part.public), "per_layer_bits": {
                                        party: [_layer_message_bits(len(part.owned(party)), *model.layer_shape(d),
                                                                    model.precision)
                                                for d in range(model.num_layers)] for party in ("alice", "bob")}})

    def direct_labels(self, model: GraphAttention, encoded: Encoded) -> np.ndarray:
        return model.forward_tokens(encoded.tokens)


GRAPH_EXCHANGE = GraphExchange()
