"""``sweep --plot``: the sweep's table as small multiples -- one row of panels per reduction: bits used
against the lower bound and accuracy over n (one line per model spec, averaged over seeds), and per model
spec and n whether a verified certificate was found, of which kind."""
from __future__ import annotations

from commsim.cli.files import write_figure
from commsim.core.errors import InputError

#: the most lines one panel draws (a legend beyond this is unreadable): the rest are left out and said so
MAX_LINES = 12


def _series(frame, reduction):
    """(model, rows sorted by n) for one reduction, at most :data:`MAX_LINES` models; the count left out."""
    rows = frame[(frame["reduction"] == reduction) & frame["error"].isna() & frame["n"].notna()]
    models = list(dict.fromkeys(rows["model"]))
    shown = models[:MAX_LINES]
    out = []
    for model in shown:
        part = rows[rows["model"] == model]
        part = part.groupby("n", sort=True).agg(bits_used=("bits_used", "mean"),
                                                lower_bound_bits=("lower_bound_bits", "mean"),
                                                model_accuracy=("model_accuracy", "mean"))
        out.append((model, part))
    return out, len(models) - len(shown)


#: marker colour per certificate kind: a collision or rectangle proves the model must fail (below the bound);
#: an error certificate is an input the model gets wrong
KIND_COLOURS = {"collision": "C3", "rectangle": "C3", "error": "C1"}


def _certificates(ax, frame, reduction, models) -> None:
    """Per model (y) and n (x): was a verified certificate found, and of which kind (over seeds: the share)."""
    rows = frame[(frame["reduction"] == reduction) & frame["error"].isna() & frame["model"].isin(models)]
    for y, model in enumerate(models):
        part = rows[rows["model"] == model]
        for n, cell in part.groupby("n", sort=True):
            verified = cell[cell["certificate"].fillna(False).astype(bool)]
            kinds = list(dict.fromkeys(verified["certificate_kind"]))
            if not kinds:
                ax.scatter([n], [y], s=60, facecolors="none", edgecolors="grey")
                continue
            share = len(verified) / len(cell)
            ax.scatter([n], [y], s=60 * (0.4 + 0.6 * share), color=KIND_COLOURS.get(kinds[0], "C0"))
            if share < 1 or len(kinds) > 1:
                ax.annotate(f"{'/'.join(kinds)} {share:.0%}", (n, y), fontsize="x-small", xytext=(4, 4),
                            textcoords="offset points")
    ax.set_yticks(range(len(models)), [m if len(m) <= 28 else m[:26] + "…" for m in models], fontsize="x-small")
    ax.set_ylim(-0.7, len(models) - 0.3)
    ax.set_title(f"{reduction}: verified certificate found")


def _kind_legend(fig) -> None:
    """One legend for the certificate panels, under the figure."""
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker="o", linestyle="", color="C3", label="collision / rectangle (the model must fail)"),
               Line2D([], [], marker="o", linestyle="", color="C1", label="error (an input it gets wrong)"),
               Line2D([], [], marker="o", linestyle="", markerfacecolor="none", markeredgecolor="grey",
                      label="none found")]
    fig.legend(handles=handles, loc="lower right", ncol=3, fontsize="small", frameon=False)


def plot_sweep(frame, path: str) -> None:
    """Draw ``frame`` (a sweep's rows) into ``path`` (.png/.svg) through the atomic writer."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'commsim[plot]'", "--plot") from None
    reductions = [r for r in dict.fromkeys(frame["reduction"])
                  if ((frame["reduction"] == r) & frame["error"].isna()).any()]
    if not reductions:
        raise InputError("--plot: no cell of the sweep ran without an error; nothing to draw", "--plot")
    fig, axes = plt.subplots(len(reductions), 3, figsize=(13, 3.4 * len(reductions) + 0.5), squeeze=False)
    for row, reduction in enumerate(reductions):
        series, left_out = _series(frame, reduction)
        bits, accuracy, certified = axes[row]
        for i, (model, part) in enumerate(series):
            colour = f"C{i % 10}"
            bits.plot(part.index, part["bits_used"], marker="o", color=colour, label=model)
            accuracy.plot(part.index, part["model_accuracy"], marker="o", color=colour, label=model)
        bound = frame[(frame["reduction"] == reduction) & frame["lower_bound_bits"].notna()] \
            .groupby("n", sort=True)["lower_bound_bits"].max()
        if len(bound):
            bits.plot(bound.index, bound.values, color="black", linestyle="--", linewidth=2, label="lower bound")
        bits.set_title(f"{reduction}: bits used vs lower bound")
        bits.set_ylabel("bits")
        bits.yaxis.set_major_locator(MaxNLocator(integer=True))
        accuracy.set_title(f"{reduction}: accuracy")
        accuracy.set_ylim(-0.05, 1.05)
        _certificates(certified, frame, reduction, [model for model, _ in series])
        for ax in axes[row]:
            ax.set_xlabel("n")
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if len(frame["n"].dropna().unique()) > 1 and frame["n"].max() / max(frame["n"].min(), 1) >= 8:
                ax.set_xscale("log", base=2)
        bits.legend(fontsize="x-small", title=f"{left_out} more models not drawn" if left_out else None)
    _kind_legend(fig)
    fig.tight_layout(rect=(0, 0.4 / (3.4 * len(reductions) + 0.5), 1, 1))
    try:
        write_figure(fig, path, option="--plot")
    finally:
        plt.close(fig)
