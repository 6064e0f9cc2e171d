"""``sweep --plot``: the sweep's table as small multiples -- one row of panels per reduction: bits used
against the lower bound and accuracy over n (one line per model spec, averaged over seeds), and per model
spec and n whether a verified certificate was found, of which kind.

Models are named by what differs between their specs (:func:`spec_labels`: ``hidden=32`` rather than six rows
of ``python:mymodels.py:gru:hid…``), the common part is the legend's title, and each row's legend sits in a
column of its own beside the panels, never over the data."""
from __future__ import annotations

import os
import textwrap

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


#: a label longer than this is wrapped onto lines of this width (never cut: cut labels can become equal)
LABEL_WIDTH = 30


def _split_spec(spec: str) -> tuple[str, dict[str, str]] | None:
    """``KIND...:k=v,k=v`` as (the part before the keys, the keys in order); None when it has no such tail."""
    head, sep, tail = spec.rpartition(":")
    pairs = [part.partition("=") for part in tail.split(",")] if sep else []
    if not pairs or any(not key or not eq for key, eq, _ in pairs):
        return None
    keys = {key: value for key, _, value in pairs}
    return (head, keys) if len(keys) == len(pairs) else None


def _common_affixes(texts: list[str]) -> tuple[str, str]:
    """The longest common prefix and suffix of ``texts``, each cut back to a separator (``:``, ``,``, ``/``)."""
    prefix = os.path.commonprefix(texts)
    suffix = os.path.commonprefix([t[::-1] for t in texts])[::-1]
    prefix = prefix[:max(prefix.rfind(c) for c in ":,/") + 1]
    cut = [suffix.find(c) for c in ":,/" if c in suffix]
    suffix = suffix[min(cut):] if cut else ""
    shortest = min(len(t) for t in texts)
    if len(prefix) + len(suffix) > shortest:           # overlapping affixes (one spec inside another): keep the prefix
        suffix = ""
    return prefix, suffix


def spec_labels(specs: list[str]) -> tuple[list[str], str]:
    """Distinct model specs as (short distinct labels, the part they share).

    Specs of one kind are named by the keys whose values differ (``width=2, precision=8``); otherwise by the
    spec with its common prefix and suffix removed.  A single spec is its own label."""
    if len(specs) <= 1:
        return list(specs), ""
    parsed = [_split_spec(s) for s in specs]
    if all(parsed) and len({head for head, _ in parsed}) == 1:
        keys = list(dict.fromkeys(k for _, kv in parsed for k in kv))
        varying = [k for k in keys if len({kv.get(k) for _, kv in parsed}) > 1]
        labels = [", ".join(f"{k}={kv[k]}" if k in kv else f"no {k}" for k in varying) for _, kv in parsed]
        fixed = [f"{k}={parsed[0][1][k]}" for k in keys if k not in varying]
        common = parsed[0][0] + (":" + ",".join(fixed) if fixed else "")
    else:
        prefix, suffix = _common_affixes(specs)
        labels = [s[len(prefix):len(s) - len(suffix)] or s for s in specs]
        common = f"{prefix}…{suffix}" if prefix or suffix else ""
    if len(set(labels)) < len(labels):                  # cannot happen for distinct specs; never show equal names
        return list(specs), ""
    return labels, common


def _wrapped(label: str) -> str:
    return "\n".join(textwrap.wrap(label, LABEL_WIDTH, break_on_hyphens=False)) if len(label) > LABEL_WIDTH else label


#: marker colour per certificate kind: a collision or rectangle proves the model must fail (below the bound);
#: an error certificate is an input the model gets wrong
KIND_COLOURS = {"collision": "C3", "rectangle": "C3", "error": "C1"}


def _certificates(ax, frame, reduction, models, labels) -> None:
    """Per model (y, named by ``labels``) and n (x): was a verified certificate found, and of which kind (over
    seeds: the share)."""
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
    ax.set_yticks(range(len(models)), [_wrapped(label) for label in labels], fontsize="small")
    for y, tick in enumerate(ax.get_yticklabels()):
        tick.set_color(f"C{y % 10}")                    # the colour of the model's lines in the other panels
    ax.set_ylim(-0.7, len(models) - 0.3)
    ax.invert_yaxis()                                   # the first model on top, as in the legend
    ax.set_title(f"{reduction}: verified certificate found")


def _kind_legend(fig) -> None:
    """One legend for the certificate panels, under the figure."""
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker="o", linestyle="", color="C3", label="collision / rectangle (the model must fail)"),
               Line2D([], [], marker="o", linestyle="", color="C1", label="error (an input it gets wrong)"),
               Line2D([], [], marker="o", linestyle="", markerfacecolor="none", markeredgecolor="grey",
                      label="none found")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize="small", frameon=False)


def sweep_figure(frame):
    """The figure of ``frame`` (a sweep's rows): per reduction, bits against the bound, accuracy, certificates,
    and the row's legend in a fourth column.  A plain :class:`matplotlib.figure.Figure`: no pyplot, so a
    notebook's backend is left alone (in Jupyter it displays itself)."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'commsim[plot]'", "--plot") from None
    reductions = [r for r in dict.fromkeys(frame["reduction"])
                  if ((frame["reduction"] == r) & frame["error"].isna()).any()]
    if not reductions:
        raise InputError("--plot: no cell of the sweep ran without an error; nothing to draw", "--plot")
    height = 3.6 * len(reductions) + 0.6
    fig = Figure(figsize=(17, height))
    axes = fig.subplots(len(reductions), 4, squeeze=False, gridspec_kw={"width_ratios": [3, 3, 3.4, 2.2]})
    for row, reduction in enumerate(reductions):
        series, left_out = _series(frame, reduction)
        labels, common = spec_labels([model for model, _ in series])
        bits, accuracy, certified, key = axes[row]
        for i, ((model, part), label) in enumerate(zip(series, labels)):
            colour = f"C{i % 10}"
            bits.plot(part.index, part["bits_used"], marker="o", color=colour, label=label)
            accuracy.plot(part.index, part["model_accuracy"], marker="o", color=colour, label=label)
        bound = frame[(frame["reduction"] == reduction) & frame["lower_bound_bits"].notna()] \
            .groupby("n", sort=True)["lower_bound_bits"].max()
        if len(bound):
            bits.plot(bound.index, bound.values, color="black", linestyle="--", linewidth=2, label="lower bound")
        bits.set_title(f"{reduction}: bits used vs lower bound")
        bits.set_ylabel("bits")
        bits.yaxis.set_major_locator(MaxNLocator(integer=True))
        accuracy.set_title(f"{reduction}: accuracy")
        accuracy.set_ylim(-0.05, 1.05)
        _certificates(certified, frame, reduction, [model for model, _ in series], labels)
        for ax in (bits, accuracy, certified):
            ax.set_xlabel("n")
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if len(frame["n"].dropna().unique()) > 1 and frame["n"].max() / max(frame["n"].min(), 1) >= 8:
                ax.set_xscale("log", base=2)
        key.axis("off")
        handles, names = bits.get_legend_handles_labels()
        title = "\n".join(["models (bits and accuracy)"] + ([_wrapped(common)] if common else [])
                          + ([f"{left_out} more models not drawn"] if left_out else []))
        key.legend(handles, [_wrapped(name) for name in names], loc="upper left", fontsize="small",
                   title=title, title_fontsize="small", frameon=False, borderaxespad=0)
    _kind_legend(fig)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    return fig


def plot_sweep(frame, path: str) -> None:
    """Draw ``frame`` (a sweep's rows) into ``path`` (.png/.svg) through the atomic writer."""
    write_figure(sweep_figure(frame), path, option="--plot")
