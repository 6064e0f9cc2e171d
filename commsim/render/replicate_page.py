"""``commsim replicate``'s figure and page: accuracy over N in the paper's layout, accuracy over the quantised
recurrent models' state bits with the accuracy ceiling and the one-way line drawn beside them, and the one-layer
transformers' attention exchange (the bits it sends against the bits the task needs); the HTML page puts the
paper's claims beside ours, one by one (built by :func:`commsim.render.page.page`, which sanitizes)."""
from __future__ import annotations

from commsim.contract.experiment import DEFAULT_COLUMNS
from commsim.render.page import code_token, figure_token, page, text_token
from commsim.render.svg import GREY, Figure, pyplot, to_svg

#: one marker per width
MARKERS = "os^Dvx*P"


def _label(row: dict, legend: dict) -> str:
    """``TF-(1, 64)``: the model's name in the experiment's ``legend`` (else its key), layers and width."""
    return f"{legend.get(row['model'], (row['model'],))[0]}-({row['layers']}, {row['width']})"


def _colour(row: dict, legend: dict) -> str:
    """The model's colour in the experiment's ``legend`` (grey when it has none)."""
    return legend[row["model"]][1] if row["model"] in legend else GREY


def _series(rows: list[dict], legend: dict) -> dict[str, list[dict]]:
    """label -> its rows over N (mean over seeds), in the order the grid lists them."""
    grouped: dict[str, dict[int, list[float]]] = {}
    for r in rows:
        grouped.setdefault(_label(r, legend), {}).setdefault(r["N"], []).append(r["accuracy"])
    return {name: [{"N": N, "accuracy": sum(a) / len(a)} for N, a in sorted(points.items())]
            for name, points in grouped.items()}


def replicate_figure(rows: list[dict], curves: dict, title: str, legend: dict | None = None):
    """Accuracy vs N (left) and, when there are quantised recurrent models, accuracy vs state bits S with each
    N's ceiling curve and its one-way line S = N·log2 k (right).  ``legend``: the experiment's names and colours
    of its models (:attr:`commsim.contract.experiment.Experiment.legend`; none: each model's key, in grey)."""
    legend = legend or {}
    plt = pyplot()
    bounded = [r for r in rows if r.get("state_bits") is not None]
    exchanged = [r for r in rows if r.get("state_bits") is None and r.get("run_bits_used") is not None]
    panels = 1 + bool(bounded) + bool(exchanged)
    fig, axes = plt.subplots(1, panels, figsize=(6.2 * panels, 5.0), squeeze=False)
    ax = axes[0][0]
    first = {}
    for r in rows:
        first.setdefault(_label(r, legend), r)
    widths = sorted({r["width"] for r in rows})
    for name, points in _series(rows, legend).items():
        r = first[name]
        ax.plot([p["N"] for p in points], [p["accuracy"] for p in points], label=name,
                color=_colour(r, legend), marker=MARKERS[widths.index(r["width"]) % len(MARKERS)],
                linestyle="-" if r["layers"] == 1 else "--")
    chance = {r.get("chance") for r in rows if r.get("chance") is not None}
    if len(chance) == 1:
        ax.axhline(chance.pop(), color=GREY, linestyle=":", label="chance")
    ax.set_xlabel("sequence length N")
    ax.set_ylabel("accuracy (fresh strings of length N)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    if bounded:
        ax = axes[0][1]
        Ns = sorted({r["N"] for r in bounded})
        shades = {N: 0.25 + 0.6 * i / max(len(Ns) - 1, 1) for i, N in enumerate(Ns)}
        for N in Ns:
            curve = curves.get(N)
            if curve:
                points = [(b, c) for b, c in zip(curve["bits"], curve["ceiling"]) if b >= 1]
                ax.plot([b for b, _ in points], [c for _, c in points], color=str(1 - shades[N]), label=curve["label"])
                ax.axvline(curve["line"], color=str(1 - shades[N]), linestyle=":", label=curve["line_label"])
        for r in bounded:                     # colour and marker as on the left; the label says N
            ax.scatter([r["state_bits"]], [r["quantised_accuracy"]], color=_colour(r, legend),
                       marker=MARKERS[widths.index(r["width"]) % len(MARKERS)], edgecolors="black", linewidths=0.5,
                       zorder=3)
            ax.annotate(f"N={r['N']}", (r["state_bits"], r["quantised_accuracy"]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
        from matplotlib.ticker import FuncFormatter
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.set_xlabel("state bits S = state numbers · p_eff (quantised, run through commsim)")
        ax.set_ylabel("accuracy of the quantised model")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title("accuracy vs state bits" + (", with the accuracy ceiling" if curves else
                                                 " (no one-way ceiling for this task)"), fontsize=10)
        ax.grid(True, alpha=0.3)
        if curves:
            ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    if exchanged:
        _exchange_panel(axes[0][panels - 1], exchanged, widths, legend)
    fig.tight_layout()
    return fig


def _exchange_panel(ax, rows: list[dict], widths: list[int], legend: dict) -> None:
    """The one-layer transformers run through commsim's attention exchange: over N, the bits the quantised
    model's exchange really sends, the paper's count 3m(p + ceil(log2 N))H, and the bits the task needs (the
    reduction's line: N - 1 for Dyck-(2,2), Lemma 1 / Theorem 5; n for EQ_n, Theorem 12)."""
    need = sorted({(r["N"], r["run_lower_bound_bits"]) for r in rows if r.get("run_lower_bound_bits") is not None})
    if need:
        ax.plot([N for N, _ in need], [b for _, b in need], color="black", linestyle=":",
                label="bits the task needs (the lower bound)")
    for name, group in _grouped(rows, legend).items():
        r = group[0]
        colour, marker = _colour(r, legend), MARKERS[widths.index(r["width"]) % len(MARKERS)]
        ax.plot([g["N"] for g in group], [g["run_bits_used"] for g in group], color=colour, marker=marker,
                label=f"{name}: bits its exchange sends (at p_eff)")
        formula = [g for g in group if g.get("run_bits_formula") is not None]
        if formula:
            ax.plot([g["N"] for g in formula], [g["run_bits_formula"] for g in formula], color=colour,
                    marker=marker, linestyle="--", fillstyle="none", label=f"{name}: 3m(p + ceil(log2 N))H")
    from matplotlib.ticker import FuncFormatter
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.set_xlabel("sequence length N")
    ax.set_ylabel("bits (log scale)")
    ax.set_title("one-layer attention: the exchange's bits vs the bound", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1)


def _grouped(rows: list[dict], legend: dict) -> dict[str, list[dict]]:
    """label -> its rows, sorted by N."""
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(_label(r, legend), []).append(r)
    return {name: sorted(group, key=lambda r: r["N"]) for name, group in out.items()}


def ceiling_check_line(rows: list[dict]) -> str:
    """How many fresh strings each quantised model's ceiling was checked on and the sampling margin that gives
    ("" when no row was checked against a ceiling)."""
    checked = [r for r in rows if not r.get("error") and r.get("sampling_margin") is not None
               and r.get("state_bits") is not None]
    if not checked:
        return ""
    fewest = min(int(r.get("ceiling_check_strings") or r.get("bound_eval") or 0) for r in checked)
    line = (f"the ceiling checked on at least {fewest} fresh strings per quantised model, sampling margin "
            f"{max(float(r['sampling_margin']) for r in checked):.3f}")
    caught = [r for r in checked if r.get("ceiling_caught_above") is not None and r.get("ceiling_miss") is not None]
    if len(caught) == len(checked):
        worst = max(caught, key=lambda r: float(r["ceiling_caught_above"]))
        line += (f"; a model more than {float(worst['ceiling_caught_above']):.3f} above its ceiling would be "
                 f"caught, except with probability {float(worst['ceiling_miss']):g}")
    return line


def _cell(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return text_token(value)


def replicate_markdown(frame, rows: list[dict], legend: dict | None = None,
                       columns: tuple[str, ...] = DEFAULT_COLUMNS) -> str:
    """The page's Markdown: what ran, the claims side by side, the invariants, the table (``columns``, those some
    row has); ``legend`` names the models (:class:`commsim.contract.experiment.Experiment`)."""
    legend = legend or {}
    a = frame.attrs
    lines = [f"# {text_token(a['title'])}", "",
             f"Experiment {code_token(a['experiment'])} at scale {code_token(a['scale'])} "
             f"({a['cells']} cells: {a['run']} run now, {a['skipped']} taken from the table, {a['failed']} failed; "
             f"executor {text_token(a['executor'])}). Source: {text_token(a['source'])}.", "",
             "The scale is far below the paper's (their models trained up to 250k steps on GPUs, with "
             "learning rates, widths and depths tuned per model); each row says its steps, batch and "
             "evaluation size.", "",
             "## The paper's claims, point by point", "",
             "| claim | the paper | ours | status | test |", "|---|---|---|---|---|"]
    for c in a["claims"]:
        lines.append(f"| {text_token(c['claim'])} | {text_token(c['paper'])} | {text_token(c['ours'])} | "
                     f"{text_token(c['status'])} | {text_token(c.get('test', ''))} |")
    intervals = sorted({c["interval"] for c in a["claims"] if c.get("interval")})
    if intervals:
        lines += ["", text_token("Every verdict reads the " + "; ".join(intervals) + ". A claim is reproduced only "
                                 "when the measured pattern is the paper's beyond that noise; not tested at this "
                                 "scale when the rows lack what it is about; at the quick scale none is judged "
                                 "(a smoke test).")]
    lines += ["", "## Where the scales differ", "", "| size | this run | the paper scale (the paper's sizes) |", "|---|---|---|"]
    ours, paper = a.get("sizes") or {}, a.get("paper_sizes") or {}
    shown = [("N", "N"), ("seeds", "seeds")] + [(key, key) for key in (ours.get("fixed") or {})]
    for name, key in shown:
        mine = ours.get(key, (ours.get("fixed") or {}).get(key))
        theirs = paper.get(key, (paper.get("fixed") or {}).get(key))
        lines.append(f"| {text_token(name)} | {text_token(mine)} | {text_token(theirs)} |")
    lines += ["", "Fewer training steps, a smaller alphabet, shorter strings and untuned learning rates are why a "
              "claim can fail to reproduce here; the paper's sizes are the `paper` scale.", ""]
    lines += ["", "## Invariants", ""]
    if a["violations"]:
        lines += [f"- {text_token(v)}" for v in a["violations"]]
    else:
        lines.append("None violated: no quantised recurrent model above its accuracy ceiling (beyond the sampling "
                     "margin), every certificate verified, the protocol equal to the quantised model in every run.")
    check = ceiling_check_line(rows)
    if check:
        lines += ["", text_token(check[0].upper() + check[1:] + ".")]
    notes = [r for r in rows if r.get("theorem5_note")]
    if notes:
        lines += ["", "## Theorem 5's line for the one-layer transformer", ""]
        lines += [f"- {text_token(_label(r, legend))}, N = {r['N']}: {text_token(r['theorem5_note'])}" for r in notes]
    lines += ["", "## Figure", "", figure_token("replicate"), "", "## Results", ""]
    columns = [c for c in columns if any(r.get(c) is not None for r in rows)]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(c)) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def replicate_page(frame, rows: list[dict], curves: dict, command: str, legend: dict | None = None,
                   columns: tuple[str, ...] = DEFAULT_COLUMNS) -> str:
    """The self-contained, sanitized HTML page of a replicate run; ``legend`` and ``columns``: the experiment's
    (:class:`commsim.contract.experiment.Experiment`)."""
    a = frame.attrs
    figure = Figure("replicate", f"{a['figure']}: accuracy over N and over state bits",
                    "Left: accuracy on fresh strings of length exactly N. Then, when the run has them: each quantised "
                    "recurrent model at its state bits S, with the accuracy ceiling of any one-way protocol with an "
                    "S-bit message and the one-way line; and each one-layer transformer's attention exchange "
                    "(Theorem 4), the bits it really sends at p_eff and the paper's count, against the bits the "
                    "task needs (Theorem 5's line for Dyck-(2,2)).",
                    to_svg(replicate_figure(rows, curves, a["title"], legend)))
    return page(a["title"], replicate_markdown(frame, rows, legend, columns), [figure], command)
