"""Graph models as research code writes them today: torch_geometric's TransformerConv with its defaults (root
weight, biases, a ReLU between the convs, ``convs``/``head``), hand-written graph attention with the usual
``/ sqrt(d_h)`` -- each read with the module's own semantics on nodes with an empty neighbourhood, protocol == model
on every ``disj-3cycle`` n = 2 instance, and commsim's reading judged against the module (a misreading fails)."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
nn = torch.nn

import commsim  # noqa: E402
from examples.research_graph import as_adjacency, edges_of  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.graph import READING_FORMAT, TorchGraphAttention  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402
from protocols.models.graph_attention import rows_to_tokens  # noqa: E402
from commsim.contract import Encoded  # noqa: E402
from protocols.simulators.graph import GRAPH_EXCHANGE  # noqa: E402

pyg = pytest.importorskip("torch_geometric")
from torch_geometric.nn import TransformerConv  # noqa: E402


class PygDefaults(nn.Module):
    """A graph transformer as PyG's examples write one: TransformerConv with its defaults, ReLU between."""

    def __init__(self, nodes: int, dim: int = 8, heads: int = 2, layers: int = 2, glue: str = "relu"):
        super().__init__()
        self.nodes, self.glue = nodes, glue
        self.embed = nn.Linear(nodes, dim)
        self.convs = nn.ModuleList(TransformerConv(dim, dim // heads, heads=heads) for _ in range(layers))
        self.head = nn.Linear(dim, 1)

    def forward(self, X):
        X = as_adjacency(X, self.nodes, torch.float32)
        out = []
        for b in range(X.shape[0]):
            h, edges = self.embed(X[b]), edges_of(X[b])
            for i, conv in enumerate(self.convs):
                y = conv(h, edges)
                h = h + y if "residual" in self.glue else y
                if self.glue.startswith("relu") and (self.glue != "relu-but-last" or i + 1 < len(self.convs)):
                    h = h.relu()
            out.append(self.head(h)[:, 0])
        return torch.stack(out)


class ScaledBlock(nn.Module):
    """Hand-written masked graph attention with the usual 1/sqrt(d_h) and biases, an MLP, both residual."""

    def __init__(self, dim: int, n_heads: int, scaled: str = "sqrt"):
        super().__init__()
        self.n_heads, self.d_h, self.scaled = n_heads, dim // n_heads, scaled
        self.factor = {"sqrt": 1 / math.sqrt(self.d_h), "d_h": 1 / self.d_h, "attribute": 0.3}[scaled]
        if scaled == "attribute":                            # a scale no rule gives, kept where commsim looks
            self.scale = self.factor
        self.query, self.key, self.value, self.out = (nn.Linear(dim, dim) for _ in range(4))
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, h, X):
        B, N, _ = h.shape
        q, k, v = (f(h).view(B, N, self.n_heads, self.d_h).transpose(1, 2) for f in (self.query, self.key, self.value))
        scores = q @ k.transpose(-1, -2)
        scores = scores / math.sqrt(self.d_h) if self.scaled == "sqrt" else scores * self.factor
        scores = scores.masked_fill(X[:, None] == 0, torch.finfo(scores.dtype).min)
        h = h + self.out((torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, N, -1))
        return h + self.mlp(h)


class ScaledGraphAttention(nn.Module):
    def __init__(self, nodes: int, dim: int = 8, heads: int = 2, layers: int = 2, scaled: str = "sqrt"):
        super().__init__()
        self.nodes = nodes
        self.embed = nn.Linear(nodes, dim)
        self.layers = nn.ModuleList(ScaledBlock(dim, heads, scaled) for _ in range(layers))
        self.head = nn.Linear(dim, 1)

    def forward(self, X):
        X = as_adjacency(X, self.nodes, self.embed.weight.dtype)
        h = self.embed(X)
        for layer in self.layers:
            h = layer(h, X)
        return self.head(h)[..., 0]


def _split(X, owner):
    N = X.shape[1]
    rows = lambda who: [i * N + j for i in range(N) if owner[i] == who for j in range(N)]  # noqa: E731
    return Encoded(rows_to_tokens(X), np.array(rows("alice"), dtype=np.int64), (N * N - 1,), tuple(rows("public")))


def _graphs_with_empty_nodes(N: int, count: int = 48) -> np.ndarray:
    X = np.random.default_rng(5).integers(0, 2, size=(count, N, N))
    X[::2, 0] = 0                                            # node 0 has no edge in half of them
    X[1::4] = 0                                              # and some graphs have none at all
    assert (~X.any(axis=2)).any(axis=1).mean() > 0.5
    return X


def _module_scores(module, X):
    with torch.no_grad():
        return module(torch.as_tensor(X)).double().numpy()


def _reading_matches_the_module(model, module, X):
    """commsim's reading at READING_FORMAT gives the module's node scores (nodes with no neighbour among them); the
    run's format follows it within its rounding, and decides alike wherever torch's margin is clear."""
    theirs = _module_scores(module, X)
    fine = model.reading()
    assert fine.format == READING_FORMAT
    assert np.abs(fine.node_scores(X) - theirs).max() < 1e-5
    ours = model.node_scores(X)
    assert np.abs(ours - theirs).max() < 1e-2
    clear = np.abs(theirs) > 0.05
    assert clear.any()
    assert np.array_equal(model.node_outputs(X)[clear], model.decide_values(theirs[..., None])[clear])


def _every_instance(module, **keywords):
    """commsim.run on disj-3cycle n = 2 (every one of its 256 instances): protocol == model, the reading judged."""
    report = commsim.run("disj-3cycle", module, n=2, **keywords)
    assert report.instances_run == 256 and report.protocol_matches_model
    agreed = report.torch_agreement
    assert agreed["instances"] == 256 and agreed["ok"] is True
    assert agreed["reading"]["format"] == READING_FORMAT.name and agreed["reading"]["decisions_differ"] == 0
    assert agreed["reading"]["max_abs_diff"] < 1e-5
    assert agreed["framework_accuracy"] == agreed["commsim_accuracy"]
    return report


@pytest.mark.parametrize("glue", ["relu", "relu-but-last", "residual", "relu-residual"])
def test_transformer_conv_with_its_defaults_and_empty_neighbourhoods(glue):
    """h = conv(h).relu() between the convs (or not after the last), h = h + conv(h), h = (h + conv(h)).relu()."""
    torch.manual_seed(3)
    module = PygDefaults(6, glue=glue)
    model = from_torch(module)
    assert isinstance(model, TorchGraphAttention) and model.empty == "zero" and model.heads == 2
    relu = [layer.activation == "relu" for layer in model.layers]
    assert relu == ([True, False] if glue == "relu-but-last" else [glue.startswith("relu")] * 2)
    assert all(layer.residual == ("residual" in glue) and layer.W_root is not None for layer in model.layers)
    X = _graphs_with_empty_nodes(6)
    _reading_matches_the_module(model, module, X)
    result = GRAPH_EXCHANGE.run_batch(model, _split(X, ["alice", "bob", "public", "alice", "bob", "bob"]))
    assert result.exact_match.all() and result.details["layers_exact"] == len(X)
    _every_instance(module)


def test_hand_written_graph_attention_over_sqrt_d_h():
    torch.manual_seed(4)
    module = ScaledGraphAttention(6)
    model = from_torch(module)
    assert isinstance(model, TorchGraphAttention) and model.empty == "uniform" and model.heads == 2
    X = _graphs_with_empty_nodes(6)
    _reading_matches_the_module(model, module, X)
    result = GRAPH_EXCHANGE.run_batch(model, _split(X, ["public", "bob", "alice", "alice", "bob", "alice"]))
    assert result.exact_match.all()
    _every_instance(module)


def test_the_reading_is_judged_under_a_fixed_point_override_too():
    torch.manual_seed(3)
    report = _every_instance(PygDefaults(6), precision=16, frac=10)
    assert report.torch_agreement["format"] == "fixed16.10" and "not judged" in report.torch_agreement["note"]


def test_a_misread_empty_neighbourhood_fails_the_agreement():
    """The old reading of TransformerConv (uniform attention where the module sums no message to 0) is not hidden
    behind the run's number format: commsim's reading disagrees with the module and says so."""
    torch.manual_seed(3)
    module = PygDefaults(6)
    model = from_torch(module)
    model.reading.parts["empty"] = "uniform"
    tokens = rows_to_tokens(_graphs_with_empty_nodes(6))
    agreed = model.framework_agreement(tokens, [35])
    assert agreed["ok"] is False and agreed["reading"]["ok"] is False
    assert agreed["reading"]["max_abs_diff"] > 1e-2 and "DISAGREES" in agreed["note"]
    model.reading.parts["empty"] = "zero"
    assert model.framework_agreement(tokens, [35])["ok"] is True


class _NoEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([TransformerConv(4, 4)])
        self.head = nn.Linear(4, 1)


@pytest.mark.parametrize("scaled", ["d_h", "attribute"])
def test_other_score_scales_are_read_from_the_forward(scaled):
    """q k^T / d_h, and a scale the block keeps as an attribute (0.3): read, not assumed."""
    torch.manual_seed(6)
    module = ScaledGraphAttention(5, scaled=scaled)
    model = from_torch(module)
    _reading_matches_the_module(model, module, _graphs_with_empty_nodes(5))
    unscaled = ScaledGraphAttention(5, scaled="sqrt")
    unscaled.load_state_dict(module.state_dict())            # the same weights under 1/sqrt(d_h): another model
    assert np.abs(from_torch(unscaled).node_scores(_graphs_with_empty_nodes(5)) - model.node_scores(
        _graphs_with_empty_nodes(5))).max() > 1e-3


class _EdgeIndexForward(PygDefaults):
    def forward(self, x, edge_index):                        # PyG's usual signature, not adjacency matrices
        for conv in self.convs:
            x = conv(x, edge_index).relu()
        return self.head(x)[:, 0]


class _NanOnEmpty(ScaledGraphAttention):
    def __init__(self):
        super().__init__(4, dim=4, heads=1, layers=1)
        self.layers[0].forward = lambda h, X: h + torch.softmax(
            (h @ h.transpose(-1, -2)).masked_fill(X == 0, float("-inf")), dim=-1) @ h


class _NormBetween(PygDefaults):
    def __init__(self):
        super().__init__(4, dim=4, heads=1, layers=2)
        self.norm = nn.LayerNorm(4)

    def forward(self, X):
        X = as_adjacency(X, self.nodes, torch.float32)
        out = []
        for b in range(X.shape[0]):
            h, edges = self.embed(X[b]), edges_of(X[b])
            h = self.convs[1](self.norm(self.convs[0](h, edges)), edges)
            out.append(self.head(h)[:, 0])
        return torch.stack(out)


@pytest.mark.parametrize("module, message", [
    (_NoEmbedding(), "a graph model needs an embedding nn.Linear"),
    (_EdgeIndexForward(4), r"forward did not run on adjacency matrices .* node scores \(B, N\)"),
    (_NanOnEmpty(), "NaN at a node with an empty neighbourhood"),
    (_NormBetween(), r"between convs\[0\] and convs\[1\]"),
])
def test_graph_modules_commsim_cannot_read_are_refused_saying_why(module, message):
    with pytest.raises(AdapterError, match=message):
        from_torch(module)
