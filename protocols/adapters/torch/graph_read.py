"""Reading a graph transformer written in torch: its parts, what its forward does between them, and their float64
semantics (the parts composed in numpy) -- :mod:`.graph` rounds the result to commsim's fixed-point model.

A graph model has three parts, found by name:

* an embedding of the adjacency rows, an ``nn.Linear(N, d)`` (bias allowed) named one of :data:`EMBED_NAMES`;
* its layers, an ``nn.ModuleList`` named one of :data:`LAYER_NAMES`, each a ``torch_geometric``
  ``TransformerConv``, a block holding one as ``conv`` (with an optional ``mlp``), or a hand-written block with
  ``query``, ``key``, ``value``, ``out`` linear maps (``heads``/``n_heads``/``num_heads``, ``kappa`` =
  ``mask``/``bias`` with ``beta``, an optional ``mlp``: ``nn.Sequential(Linear, ReLU, Linear)``);
* a readout ``nn.Linear(d, 1)`` named one of :data:`READOUT_NAMES`;

and its forward maps adjacency matrices (B, N, N) to node scores (B, N).  What is not in the parts is read from
the forward itself: the module is run on probe graphs (:func:`probe_graphs`: random ones, with nodes of empty
neighbourhood among them) with hooks on the three parts, and

* each layer's unknowns are chosen so that its float64 semantics gives the layer's recorded output from its
  recorded input: a hand-written block's score scale (1, 1/sqrt(m), 1/m, 1/sqrt(d), or its ``scale`` attribute)
  and whether it adds its input (a residual), and for every layer what an empty neighbourhood gives (``uniform``:
  a ``masked_fill`` with the lowest float over a row without edges; ``zero``: a message-passing sum over no edges,
  as ``TransformerConv``);
* each *seam* -- from the embedding to the first layer, between layers, to the readout -- is read as the identity,
  a ReLU, a residual around the layer (its input plus its output), or both;

the closest candidate within the module dtype's tolerance wins, and an :class:`AdapterError` names the part or
seam no candidate explains.  ``TransformerConv`` reads as H heads of C channels: head t's W_Q is ``lin_query``'s
columns t C .. (t + 1) C scaled by 1/sqrt(C) (its bias too), W_O places its C channels at t C, and
``root_weight=True`` adds the per-node map ``lin_skip`` (x_i W_root + b_root).
"""
from __future__ import annotations

import math

import numpy as np

from protocols.adapters.torch.layers import TOLERANCE, AdapterError, dtype_name, tensor

__all__ = ["EMBED_NAMES", "LAYER_NAMES", "READOUT_NAMES", "GRAPH_MODEL_NEEDS", "is_graph_module", "read_graph",
           "float_node_scores", "float_layer", "probe_graphs"]

EMBED_NAMES = ("embed", "embedding", "lin_in", "input_proj", "encoder")
LAYER_NAMES = ("layers", "convs", "blocks")
READOUT_NAMES = ("readout", "head", "lin_out", "classifier")

#: what a graph model must be, in words (every refusal of a module with graph parts says it)
GRAPH_MODEL_NEEDS = (f"a graph model needs an embedding nn.Linear(N, d) of the adjacency rows (named "
                     f"{'/'.join(EMBED_NAMES)}), its layers in an nn.ModuleList (named {'/'.join(LAYER_NAMES)}: "
                     f"torch_geometric TransformerConv, blocks holding one as 'conv', or blocks with "
                     f"query/key/value/out nn.Linear), a readout nn.Linear(d, 1) (named {'/'.join(READOUT_NAMES)}), "
                     f"and a forward from adjacency matrices (B, N, N) to node scores (B, N)")

#: what attention over an empty neighbourhood may give (protocols.models.graph_attention.EMPTY)
EMPTY_SEMANTICS = ("zero", "uniform")

#: probe graphs the reading is chosen and verified on
PROBES = 8


def linear_parts(lin) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(W (in, out), bias (out,) or None) of an ``nn.Linear`` or a ``torch_geometric`` ``Linear``; None otherwise."""
    import torch.nn as nn
    weight = getattr(lin, "weight", None)
    if not isinstance(lin, nn.Module) or not isinstance(weight, nn.Parameter) or weight.dim() != 2 \
            or isinstance(weight, nn.parameter.UninitializedParameter):
        return None
    bias = getattr(lin, "bias", None)
    return tensor(weight).T, None if bias is None else tensor(bias).reshape(-1)


def _named(module, names):
    for name in names:
        part = getattr(module, name, None)
        if part is not None:
            return name, part
    return None, None


def _is_conv(part) -> bool:
    return type(part).__name__ == "TransformerConv"


def _layer_kind(layer) -> str | None:
    if _is_conv(layer):
        return "conv"
    if _is_conv(getattr(layer, "conv", None)):
        return "conv-block"
    if all(linear_parts(getattr(layer, n, None)) is not None for n in ("query", "key", "value", "out")):
        return "attention-block"
    return None


def _structure(module):
    """(embed, layers, readout) with their names, or None when the module lacks one of them."""
    import torch.nn as nn
    e_name, embed = _named(module, EMBED_NAMES)
    l_name, layers = _named(module, LAYER_NAMES)
    r_name, readout = _named(module, READOUT_NAMES)
    if linear_parts(embed) is None or not isinstance(layers, nn.ModuleList) or not len(layers) \
            or linear_parts(readout) is None or linear_parts(readout)[0].shape[1] != 1:
        return None
    return (e_name, embed), (l_name, layers), (r_name, readout)


def is_graph_module(obj) -> bool:
    """Does ``obj`` look like a graph model (module docstring): its three parts with graph layers, or any
    ``TransformerConv`` inside it (then :func:`read_graph` says what is missing)?"""
    import torch.nn as nn
    if not isinstance(obj, nn.Module):
        return False
    found = _structure(obj)
    if found is not None and all(_layer_kind(layer) is not None for layer in found[1][1]):
        return True
    return any(_is_conv(m) for m in obj.modules())


def probe_graphs(nodes: int) -> np.ndarray:
    """Random digraphs on ``nodes`` nodes with empty neighbourhoods among them (a row without edges in half of them,
    the empty graph, the complete one): (PROBES, N, N) int64."""
    X = np.random.default_rng(0).integers(0, 2, size=(PROBES, nodes, nodes))
    for k, graph in enumerate(range(0, PROBES, 2)):
        X[graph, k % nodes] = 0
    X[1], X[3] = 0, 1
    return X


# ---- float64 semantics -------------------------------------------------------------------------------------------
def _affine(h, W, b):
    return h @ W if b is None else h @ W + b


def float_layer(layer: dict, h: np.ndarray, X: np.ndarray, kappa: str, empty: str) -> np.ndarray:
    """One layer's float64 semantics (:mod:`protocols.models.graph_attention`): the new states (B, N, d_out)."""
    d_out = layer["heads"][0]["W_O"].shape[1]
    y = h.copy() if layer["residual"] else np.zeros(h.shape[:-1] + (d_out,))
    if layer["W_root"] is not None:
        y = y + _affine(h, layer["W_root"], layer["b_root"])
    none = ~(X == 1).any(axis=2, keepdims=True)
    for head in layer["heads"]:
        A = _affine(h, head["W_Q"], head["b_Q"]) @ np.swapaxes(_affine(h, head["W_K"], head["b_K"]), 1, 2)
        A = np.where(X == 1, A, -np.inf) if kappa == "mask" else A + head["beta"] * X
        if kappa == "mask":
            A = np.where(none, 0.0, A)
        w = np.exp(A - A.max(axis=2, keepdims=True))
        w = w / w.sum(axis=2, keepdims=True)
        if kappa == "mask" and empty == "zero":
            w = np.where(none, 0.0, w)
        y = y + (w @ _affine(h, head["W_V"], head["b_V"])) @ head["W_O"]
    if layer["b_O"] is not None:
        y = y + layer["b_O"]
    if layer["W1"] is not None:
        y = y + np.maximum(y @ layer["W1"] + layer["b1"], 0.0) @ layer["W2"] + layer["b2"]
    return np.maximum(y, 0.0) if layer["activation"] == "relu" else y


def float_node_scores(parts: dict, X: np.ndarray) -> np.ndarray:
    """The parts composed in float64 (the semantics read): every node's score (B, N)."""
    X = np.asarray(X, dtype=np.float64)
    h = _affine(X, parts["E"], parts["b_E"])
    if parts["embed_activation"] == "relu":
        h = np.maximum(h, 0.0)
    for layer in parts["layers"]:
        h = float_layer(layer, h, X, parts["kappa"], parts["empty"])
    return h @ parts["w_out"] + parts["b_out"]


# ---- the parts of a layer ----------------------------------------------------------------------------------------
def _layer(heads, *, mlp=(None, None, None, None), W_root=None, b_root=None, b_O=None, residual=True) -> dict:
    W1, b1, W2, b2 = mlp
    return {"heads": heads, "W1": W1, "b1": b1, "W2": W2, "b2": b2, "W_root": W_root, "b_root": b_root, "b_O": b_O,
            "residual": residual, "activation": "none"}


def _head(W_Q, W_K, W_V, W_O, beta=0.0, b_Q=None, b_K=None, b_V=None) -> dict:
    return {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O, "beta": float(beta), "b_Q": b_Q, "b_K": b_K, "b_V": b_V}


def _mlp(layer, label: str):
    """(W1, b1, W2, b2) of a block's MLP branch, or Nones."""
    import torch.nn as nn
    mlp = getattr(layer, "mlp", None)
    if mlp is None:
        return None, None, None, None
    parts = list(mlp) if isinstance(mlp, nn.Sequential) else []
    if len(parts) != 3 or linear_parts(parts[0]) is None or not isinstance(parts[1], nn.ReLU) \
            or linear_parts(parts[2]) is None:
        raise AdapterError(f"{label}.mlp must be nn.Sequential(nn.Linear, nn.ReLU, nn.Linear); got {mlp}")
    (W1, b1), (W2, b2) = linear_parts(parts[0]), linear_parts(parts[2])
    return W1, np.zeros(W1.shape[1]) if b1 is None else b1, W2, np.zeros(W2.shape[1]) if b2 is None else b2


def _conv_heads(conv, label: str) -> tuple[list, dict]:
    """The heads of a TransformerConv and its root weight (module docstring)."""
    H, C = int(conv.heads), int(conv.out_channels)
    refused = [what for what, bad in (("concat=False", not conv.concat), ("edge_dim", conv.lin_edge is not None),
                                      ("beta=True", conv.lin_beta is not None)) if bad]
    if refused:
        raise AdapterError(f"{label}: commsim reads a TransformerConv with concat=True, no edge_dim and no beta "
                           f"(root_weight and bias as you like); this one has {', '.join(refused)}")
    (Wq, bq), (Wk, bk), (Wv, bv) = (linear_parts(getattr(conv, n)) for n in ("lin_query", "lin_key", "lin_value"))
    heads, s = [], 1.0 / math.sqrt(C)
    for t in range(H):
        cols = slice(t * C, (t + 1) * C)
        W_O = np.zeros((C, H * C))
        W_O[:, cols] = np.eye(C)
        pick = lambda b: None if b is None else b[cols]  # noqa: E731
        heads.append(_head(Wq[:, cols] * s, Wk[:, cols], Wv[:, cols], W_O, 0.0,
                           None if bq is None else bq[cols] * s, pick(bk), pick(bv)))
    root = linear_parts(conv.lin_skip) if conv.root_weight else (None, None)
    return heads, {"W_root": root[0], "b_root": root[1]}


def _scales(layer, m: int, d: int) -> list[tuple[str, float]]:
    """The score scales a hand-written block may use, its own ``scale`` attribute first."""
    given = getattr(layer, "scale", None)
    found = [("its scale attribute", float(given))] if isinstance(given, (int, float)) else []
    found += [("1", 1.0), ("1/sqrt(m)", 1.0 / math.sqrt(m)), ("1/m", 1.0 / m), ("1/sqrt(d)", 1.0 / math.sqrt(d))]
    return [(name, s) for i, (name, s) in enumerate(found) if all(abs(s - t) > 1e-15 for _, t in found[:i])]


def _attention_block(layer, label: str) -> tuple[list[tuple[str, dict]], str]:
    """Candidate readings (name, layer) of a hand-written block, and its kappa."""
    (Wq, bq), (Wk, bk), (Wv, bv), (Wo, bo) = (linear_parts(getattr(layer, n)) for n in ("query", "key", "value",
                                                                                        "out"))
    H = int(next((getattr(layer, n) for n in ("heads", "n_heads", "num_heads") if hasattr(layer, n)), 1))
    if Wq.shape[1] % H or Wk.shape[1] != Wq.shape[1] or Wv.shape[1] != Wq.shape[1] or Wo.shape[0] != Wq.shape[1]:
        raise AdapterError(f"{label}: query/key/value ({Wq.shape[1]}, {Wk.shape[1]}, {Wv.shape[1]} columns) and out "
                           f"({Wo.shape[0]} rows) do not split alike into heads = {H}")
    m = Wq.shape[1] // H
    kappa = str(getattr(layer, "kappa", "mask"))
    if kappa not in ("mask", "bias"):
        raise AdapterError(f"{label}.kappa must be 'mask' or 'bias'; got {kappa!r}")
    beta = np.zeros(H) if kappa == "mask" else tensor(layer.beta).reshape(H)
    mlp = _mlp(layer, label)
    out = []
    for name, s in _scales(layer, m, Wq.shape[0]):
        cut = lambda a, t: None if a is None else a[..., t * m:(t + 1) * m]  # noqa: E731
        heads = [_head(cut(Wq, t) * s, cut(Wk, t), cut(Wv, t), Wo[t * m:(t + 1) * m], beta[t],
                       None if bq is None else cut(bq, t) * s, cut(bk, t), cut(bv, t)) for t in range(H)]
        out += [(f"scale {name}", _layer(heads, mlp=mlp, b_O=bo, residual=True)),
                (f"scale {name}, no residual", _layer(heads, mlp=mlp, b_O=bo, residual=False))]
    return out, kappa


def layer_candidates(layer, label: str) -> tuple[list[tuple[str, dict]], str]:
    """Candidate readings (name, layer dict) of one layer and its kappa (module docstring)."""
    kind = _layer_kind(layer)
    if kind == "conv":
        heads, root = _conv_heads(layer, label)
        return [("TransformerConv", _layer(heads, residual=False, **root))], "mask"
    if kind == "conv-block":
        heads, root = _conv_heads(layer.conv, f"{label}.conv")
        mlp = _mlp(layer, label)
        return [("h + conv(h)", _layer(heads, mlp=mlp, residual=True, **root)),
                ("conv(h)", _layer(heads, mlp=mlp, residual=False, **root))], "mask"
    if kind == "attention-block":
        return _attention_block(layer, label)
    raise AdapterError(f"{label} ({type(layer).__name__}) is not a graph layer: {GRAPH_MODEL_NEEDS}")


# ---- the forward, recorded -----------------------------------------------------------------------------------------
def _first_tensor(args, kwargs):
    import torch
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
        if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
            return value[0]
    return None


def record(module, parts: list, X: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Run ``module`` on X (B, N, N): (its node scores (B, N), each part's (input, output) as (B, N, .) float64),
    or an AdapterError naming the part whose node states could not be followed."""
    import torch
    B, N = X.shape[0], X.shape[1]
    seen = [([], []) for _ in parts]

    def hook(k):
        def grab(mod, args, kwargs, output):
            x = _first_tensor(args, kwargs)
            y = output[0] if isinstance(output, (tuple, list)) else output
            if x is not None and isinstance(y, torch.Tensor):
                seen[k][0].append(tensor(x).reshape(-1, x.shape[-1]))
                seen[k][1].append(tensor(y).reshape(-1, y.shape[-1]))
        return grab

    handles = [part.register_forward_hook(hook(k), with_kwargs=True) for k, (_, part) in enumerate(parts)]
    try:
        with torch.no_grad():
            scores = module(torch.as_tensor(X))
    except Exception as exc:  # noqa: BLE001 - the user's forward
        raise AdapterError(f"{type(module).__name__}'s forward did not run on adjacency matrices of shape {X.shape} "
                           f"({type(exc).__name__}: {exc}); {GRAPH_MODEL_NEEDS}") from None
    finally:
        for handle in handles:
            handle.remove()
    out = []
    for (name, _), (ins, outs) in zip(parts, seen):
        rows = [sum(len(a) for a in arrays) for arrays in (ins, outs)]
        if rows != [B * N, B * N]:
            raise AdapterError(f"{type(module).__name__}.{name} was not run once per node of every graph (saw "
                               f"{rows[1]} rows for {B} graphs of {N} nodes); {GRAPH_MODEL_NEEDS}")
        out.append(tuple(np.concatenate(a).reshape(B, N, -1) for a in (ins, outs)))
    scores = tensor(scores)
    if scores.shape == (B, N, 1):
        scores = scores[..., 0]
    return scores, out


def _close(ours, theirs, tol) -> float | None:
    """max |ours - theirs| when within atol + rtol |theirs| everywhere, else None."""
    atol, rtol = tol
    if ours.shape != theirs.shape or not np.all(np.abs(ours - theirs) <= atol + rtol * np.abs(theirs)):
        return None
    return float(np.abs(ours - theirs).max(initial=0.0))


def _best(options, theirs, tol):
    """The (name, value, result) whose result is closest to ``theirs`` within ``tol``; None when none is."""
    scored = [(err, k) for k, (_, _, ours) in enumerate(options) if (err := _close(ours, theirs, tol)) is not None]
    return options[min(scored)[1]] if scored else None


def _seam(before: tuple[np.ndarray, np.ndarray], after: np.ndarray, tol, *, residual_allowed: bool):
    """How the forward goes from a part's (input, output) to the next part's input: (relu?, residual?) or None."""
    x, y = before
    options = [("identity", (False, False), y), ("relu", (True, False), np.maximum(y, 0.0))]
    if residual_allowed and x.shape == y.shape:
        options += [("residual", (False, True), x + y), ("relu of the residual", (True, True), np.maximum(x + y, 0))]
    found = _best(options, after, tol)
    return None if found is None else found[1]


def _read_layers(label: str, l_name: str, layers, seen: list, X: np.ndarray, tol):
    """(each layer's reading, their kappas, what an empty neighbourhood gives): per layer the candidate closest to its
    recorded output, under the ``empty`` whose worst layer is closest; an AdapterError naming the layer none
    explains."""
    tried = []
    for empty in EMPTY_SEMANTICS:
        read, kappas, worst = [], set(), 0.0
        for i, layer in enumerate(layers):
            options, kappa = layer_candidates(layer, f"{label}.{l_name}[{i}]")
            kappas.add(kappa)
            h_in, h_out = seen[1 + i]
            best = _best([(n, lay, float_layer(lay, h_in, X, kappa, empty)) for n, lay in options], h_out, tol)
            if best is None:
                tried.append((i, empty, options))
                break
            read.append(best[1])
            worst = max(worst, _close(best[2], h_out, tol))
        else:
            tried.append((worst, empty, read, kappas))
    found = [t for t in tried if len(t) == 4]
    if found:
        _, empty, read, kappas = min(found, key=lambda t: t[0])
        return read, kappas, empty
    i, _, options = max(tried, key=lambda t: t[0])
    raise AdapterError(f"{label}.{l_name}[{i}] computes something other than what its parts say (tried: "
                       f"{'; '.join(n for n, _ in options)}; an empty neighbourhood giving "
                       f"{' or '.join(EMPTY_SEMANTICS)}); {GRAPH_MODEL_NEEDS}")


def read_graph(module) -> tuple[dict, np.ndarray, np.ndarray]:
    """The float64 parts of a graph model (module docstring), the probe graphs and the module's scores on them."""
    label = type(module).__name__
    found = _structure(module)
    if found is None:
        raise AdapterError(f"{label} has torch_geometric layers but not the parts commsim reads: {GRAPH_MODEL_NEEDS}")
    (e_name, embed), (l_name, layers), (r_name, readout) = found
    E, b_E = linear_parts(embed)
    tol = TOLERANCE.get(dtype_name(next(module.parameters()).dtype), TOLERANCE["float32"])
    X = probe_graphs(E.shape[0])
    stages = [(e_name, embed)] + [(f"{l_name}[{i}]", layer) for i, layer in enumerate(layers)] + [(r_name, readout)]
    theirs, seen = record(module, stages, X)
    if np.isnan(theirs).any():
        empty = ~X.any(axis=2)
        where = "a node with an empty neighbourhood (no edge in its row)" if empty[np.isnan(theirs)].all() else "a node"
        raise AdapterError(f"{label} gives NaN at {where} on probe graphs (a masked_fill with -inf over a row without "
                           f"edges?); commsim reads a model whose every node score is a number: fill with the dtype's "
                           f"lowest value, or zero such rows")
    first = _seam((None, seen[0][1]), seen[1][0], tol, residual_allowed=False)
    if first is None or first[1]:
        raise AdapterError(f"{label}: between {e_name} and {l_name}[0] the forward does something other than the "
                           f"identity or a ReLU; {GRAPH_MODEL_NEEDS}")
    read, kappas, empty = _read_layers(label, l_name, layers, seen, X.astype(np.float64), tol)
    if len(kappas) > 1:
        raise AdapterError(f"{label}: every layer must use the same kappa; got {sorted(kappas)}")
    for i, lay in enumerate(read):
        seam = _seam(seen[1 + i], seen[2 + i][0], tol, residual_allowed=not lay["residual"] and lay["W1"] is None)
        nxt = f"{l_name}[{i + 1}]" if i + 1 < len(read) else r_name
        if seam is None:
            raise AdapterError(f"{label}: between {l_name}[{i}] and {nxt} the forward does something other than pass "
                               f"the layer's output, its ReLU, the residual (input + output) or its ReLU; "
                               f"{GRAPH_MODEL_NEEDS}")
        lay["activation"] = "relu" if seam[0] else "none"
        lay["residual"] = lay["residual"] or seam[1]
    w_out, b_out = linear_parts(readout)
    parts = {"E": E, "b_E": b_E, "embed_activation": "relu" if first[0] else "none", "layers": read,
             "kappa": kappas.pop(), "empty": empty, "w_out": w_out.reshape(-1),
             "b_out": 0.0 if b_out is None else float(b_out[0]),
             "conv": any(_layer_kind(layer) != "attention-block" for layer in layers)}
    return parts, X, theirs
