"""Figures of the theory objects: the budget curve, a separation's two sides over N, the communication matrix, the protocol tree, a DFA.

Each takes the object a command already built (a budget report, a :class:`MatrixReport`, a
:class:`ProtocolTree`, a :class:`DFA`) and returns a matplotlib figure; graphs are laid out by networkx.
"""
from __future__ import annotations

import numpy as np

from commsim.render.svg import ALICE, BAD, BOB, GOOD, GREY, plain_log_labels, pyplot

#: matrices up to this many rows and columns are drawn cell by cell; the protocol tree and the DFA are
#: drawn up to these many nodes
MATRIX_MAX_SIDE = 64
TREE_MAX_NODES = 400
DFA_MAX_STATES = 40


def budget_figure(report):
    """Protocol bits and the lower bound against N (log-log), the crossing (max N) marked: a dashed line when
    it lies in the plotted range of N, else a note saying on which side of the range it is."""
    plt = pyplot()
    rows = report.table
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([r["n"] for r in rows], [r["bits"] for r in rows], marker="o", color=ALICE,
            label=f"{report.arch} protocol bits")
    bounded = [r for r in rows if r["lower_bound_bits"] is not None]
    if bounded:
        ax.plot([r["n"] for r in bounded], [r["lower_bound_bits"] for r in bounded], marker="s", color=BOB,
                label=f"lower bound ({report.bound.source})")
    low, high = min(r["n"] for r in rows), max(r["n"] for r in rows)
    if report.max_n and low <= report.max_n <= high:
        ax.axvline(report.max_n, color=GREY, linestyle="--", label=f"max N = {report.max_n}")
    elif report.max_n:
        side = f"beyond the range (N ≤ {high})" if report.max_n > high else f"below the range (N ≥ {low})"
        ax.plot([], [], linestyle="none", label=f"max N = {report.max_n}, {side}: the crossing is not drawn")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    plain_log_labels(fig)
    ax.set_xlabel("sequence length N")
    ax.set_ylabel("bits")
    ax.set_title(f"{report.task}: {report.arch}, width {report.width}, p = {report.precision}, H = {report.heads}",
                 fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def separation_figure(data: dict):
    """Both sides of a separation (``commsim separate``'s dict) against N on log-log axes, the first N from
    which ours stays below theirs marked (or a note that there is none in the range)."""
    plt = pyplot()
    plot, rows = data["plot"], data["rows"]
    xs = [row[plot["x"]] for row in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for series in plot["series"]:
        pts = [(x, row.get(series["key"])) for x, row in zip(xs, rows) if row.get(series["key"]) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", linestyle=series.get("style", "-"),
                    label=series["label"])
    cross = plot.get("crossing")
    if cross:
        below = [r["N"] for r in rows if r.get(cross["ours"]) is not None and r.get(cross["theirs"]) is not None
                 and r[cross["ours"]] < r[cross["theirs"]]]
        if below and all(r[cross["ours"]] < r[cross["theirs"]] for r in rows if r["N"] >= below[0]):
            ax.axvline(below[0], color=GREY, linestyle="-.", linewidth=1)
            ax.annotate(f"crossing: N = {below[0]}", (below[0], 0.02), xycoords=("data", "axes fraction"),
                        fontsize=8, rotation=90, ha="right", va="bottom")
        else:
            ax.plot([], [], linestyle="none",      # in the legend, which is placed clear of the curves
                    label=f"no crossing up to N = {rows[-1]['N']} ({cross.get('text', 'see the notes')})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    plain_log_labels(fig)
    ax.set_xlabel(plot.get("xlabel", "sequence length N"))
    ax.set_ylabel(plot["ylabel"])
    ax.set_title(f"{data['task']}: {data['title']}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def matrix_figure(report):
    """The communication matrix as a heatmap (rows: Alice's inputs, columns: Bob's), the fooling set the
    search found outlined cell by cell.  None when the matrix is larger than MATRIX_MAX_SIDE."""
    plt = pyplot()
    cm = report.matrix
    M = cm.matrix
    rows, cols = M.shape
    if rows > MATRIX_MAX_SIDE or cols > MATRIX_MAX_SIDE:
        return None
    side = min(9.0, max(3.5, 0.22 * max(rows, cols) + 2))
    fig, ax = plt.subplots(figsize=(side * max(cols / max(rows, cols), 0.5) + 1.5, side))
    from matplotlib.colors import ListedColormap
    ax.imshow(M, cmap=ListedColormap(["#f4f4f4", "#3b6ea5"]), vmin=0, vmax=1, interpolation="nearest",
              aspect="equal")
    fooling = report.fooling
    for r, c in zip(np.asarray(fooling.rows), np.asarray(fooling.cols)):
        ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor=BOB, lw=2))
    if rows <= 32:
        ax.set_yticks(range(rows), [cm.input_text("alice", i) for i in range(rows)], fontsize=6,
                      family="DejaVu Sans Mono")
    if cols <= 32:
        ax.set_xticks(range(cols), [cm.input_text("bob", j) for j in range(cols)], fontsize=6, rotation=90,
                      family="DejaVu Sans Mono")
    ax.set_ylabel("Alice's input x")
    ax.set_xlabel("Bob's input y")
    ax.set_title(f"M[x, y] = {cm.problem.name}(x, y), n = {cm.problem.n}: dark = 1; outlined: a fooling set of "
                 f"{fooling.size} cells of value {fooling.value}", fontsize=9)
    fig.tight_layout()
    return fig


def _tree_positions(graph) -> dict:
    """Leaves left to right in depth-first order, each parent above the middle of its children."""
    import networkx as nx
    roots = [v for v in graph.nodes if graph.in_degree(v) == 0]
    pos, next_x = {}, [0]
    for root in roots:
        depth = nx.shortest_path_length(graph, root)
        for v in nx.dfs_postorder_nodes(graph, root):
            kids = list(graph.successors(v))
            x = float(np.mean([pos[k][0] for k in kids])) if kids else float(next_x[0])
            if not kids:
                next_x[0] += 1
            pos[v] = (x, -depth[v])
    return pos


def tree_figure(tree):
    """The protocol tree: internal nodes by speaker, answer leaves coloured by output, edges labelled with
    the message bits.  None when the tree has more than TREE_MAX_NODES nodes."""
    import networkx as nx
    plt = pyplot()
    g = tree.graph
    if g.number_of_nodes() > TREE_MAX_NODES:
        return None
    pos = _tree_positions(g)
    leaves = sum(1 for v in g.nodes if g.out_degree(v) == 0)
    depth = max((-y for _, y in pos.values()), default=0)
    fig, ax = plt.subplots(figsize=(min(max(4.0, 0.45 * leaves + 1.5), 16.0), 1.2 + 0.9 * (depth + 1)))
    outputs = sorted({str(d.get("output")) for _, d in g.nodes(data=True) if d["kind"] == "output"})
    palette = [GOOD, BAD, "#56B4E9", "#E69F00", "#999999"]
    colours = []
    for v, d in g.nodes(data=True):
        if d["kind"] == "output":
            colours.append(palette[outputs.index(str(d.get("output"))) % len(palette)])
        elif d["kind"] == "leaf":
            colours.append("#dddddd")
        else:
            colours.append(ALICE if d.get("owner") == "alice" else BOB)
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=False, edge_color="#888888", width=0.8)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colours, node_size=120, edgecolors="#333333", linewidths=0.5)
    if g.number_of_edges() <= 80:
        labels = {(u, v): (d["bits"] or "ε") if d["kind"] == "message" else "" for u, v, d in g.edges(data=True)}
        nx.draw_networkx_edge_labels(g, pos, edge_labels=labels, ax=ax, font_size=6,
                                     font_family="DejaVu Sans Mono", rotate=False)
    handles = [plt.Line2D([], [], marker="o", ls="", color=ALICE, label="Alice speaks"),
               plt.Line2D([], [], marker="o", ls="", color=BOB, label="Bob speaks")]
    handles.append(plt.Line2D([], [], marker="o", ls="", color="#dddddd", label="transcript leaf"))
    handles += [plt.Line2D([], [], marker="o", ls="", color=palette[i % len(palette)], label=f"output {o}")
                for i, o in enumerate(outputs)]
    ax.legend(handles=handles, fontsize=7, loc="upper right", frameon=False)
    ax.set_title(f"{tree.protocol_name} protocol for {tree.problem.name}, n = {tree.problem.n}: depth "
                 f"{tree.depth} bits, {len(tree.output_leaves)} answer leaves", fontsize=9)
    ax.axis("off")
    fig.tight_layout()
    return fig


def dfa_figure(dfa, title: str = "minimal DFA"):
    """States (accepting ones with a double ring, the dead sink dashed and grey), the start marked,
    transitions labelled with their symbols.  None beyond DFA_MAX_STATES states."""
    import networkx as nx
    plt = pyplot()
    if dfa.num_states > DFA_MAX_STATES:
        return None
    g = dfa.graph()
    layers = nx.single_source_shortest_path_length(g, dfa.start)
    for v in g.nodes:
        g.nodes[v]["layer"] = layers.get(v, max(layers.values(), default=0) + 1)
    pos = nx.multipartite_layout(g, subset_key="layer", align="vertical")
    size = max(4.0, min(12.0, 1.1 * (max(layers.values(), default=0) + 2)))
    fig, ax = plt.subplots(figsize=(size + 1.5, max(3.0, 0.7 * max(np.bincount(list(layers.values()))) + 1.5)))
    live = [v for v, d in g.nodes(data=True) if d["live"]]
    dead = [v for v, d in g.nodes(data=True) if not d["live"]]
    straight = [(u, v) for u, v in g.edges if u != v and not g.has_edge(v, u)]
    curved = [(u, v) for u, v in g.edges if u != v and g.has_edge(v, u)]
    loops = [(u, v) for u, v in g.edges if u == v]
    kw = {"ax": ax, "node_size": 520, "arrowsize": 10, "edge_color": "#555555", "width": 0.9}
    nx.draw_networkx_edges(g, pos, edgelist=straight, **kw)
    nx.draw_networkx_edges(g, pos, edgelist=curved, connectionstyle="arc3,rad=0.18", **kw)
    nx.draw_networkx_edges(g, pos, edgelist=loops, **kw)
    nx.draw_networkx_nodes(g, pos, nodelist=live, ax=ax, node_color="#ffffff", edgecolors=ALICE, node_size=520)
    nx.draw_networkx_nodes(g, pos, nodelist=dead, ax=ax, node_color="#eeeeee", edgecolors=GREY, node_size=520,
                           linewidths=1.0)
    accepting = [v for v, d in g.nodes(data=True) if d["accepting"]]
    nx.draw_networkx_nodes(g, pos, nodelist=accepting, ax=ax, node_color="none", edgecolors=GOOD, node_size=300)
    nx.draw_networkx_labels(g, pos, labels={v: str(d["name"]) for v, d in g.nodes(data=True)}, ax=ax,
                            font_size=7)
    labels = {(u, v): d["label"] for u, v, d in g.edges(data=True)}
    nx.draw_networkx_edge_labels(g, pos, edge_labels={e: labels[e] for e in straight}, ax=ax, font_size=7)
    nx.draw_networkx_edge_labels(g, pos, edge_labels={e: labels[e] for e in curved}, ax=ax, font_size=7,
                                 connectionstyle="arc3,rad=0.18")
    for u, _ in loops:
        x, y = pos[u]
        ax.text(x, y + 0.16, labels[(u, u)], ha="center", fontsize=7, color="#555555")
    sx, sy = pos[dfa.start]
    ax.annotate("start", xy=(sx, sy), xytext=(sx - 0.25, sy + 0.12), fontsize=8,
                arrowprops={"arrowstyle": "-|>", "color": "#000"})
    ax.set_title(f"{title}: {dfa.num_states} states ({len(live)} live, {len(dead)} dead); "
                 "double ring = accepting, grey = dead sink", fontsize=9)
    ax.axis("off")
    ax.margins(0.12)
    fig.tight_layout()
    return fig
