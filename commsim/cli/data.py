"""``commsim data``: the vocabulary and seeded samples of a reduction's task -- the exact tokens commsim
feeds a model and the labels a correct model outputs (:func:`commsim.runs.sample.sample`)."""
from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from commsim.cli import cli
from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.core.limits import check_memory, check_seed, check_size
from commsim.runs.sample import labels_for, sample_encoded, vocabulary
from commsim.runs.stages import check_run_size
from commsim.plugins import load_plugins

#: the most samples ``commsim data`` prints
MAX_DATA_SAMPLES = 10 ** 5

#: bytes per printed token (its id or name and a separator), for the memory check
BYTES_PER_TOKEN = 16


def data_dict(reduction_id: str, n: int | None, count: int, seed: int) -> dict:
    """The JSON form of ``commsim data``: every size checked before anything is sampled."""
    reduction = load_plugins().get("reduction", reduction_id, param="reduction")
    n = reduction.default_n if n is None else check_run_size(reduction, n)
    count = check_size(count, "count", 1, MAX_DATA_SAMPLES, "every sample is printed", noun="count")
    check_seed(seed, "seed")
    seq_len = reduction.length_for_size(n) if getattr(reduction, "length_scale", 0) else None
    if seq_len is not None:
        check_memory(count * seq_len * BYTES_PER_TOKEN, "count", f"{count} samples of {seq_len} tokens")
    reduction, problem, A, B, encoded = sample_encoded(reduction, n, count, seed, max_size=MAX_DATA_SAMPLES)
    labels = labels_for(reduction, problem, A, B, encoded)
    return {"reduction": reduction.id, "n": int(n), "seed": int(seed), "count": int(count),
            "seq_len": encoded.seq_len, "vocabulary": vocabulary(reduction, n),
            "output_positions": [int(p) for p in encoded.output_positions],
            "alice_positions": [int(p) for p in encoded.alice_positions],
            "tokens": encoded.tokens.astype(int).tolist(), "labels": labels.astype(int).tolist()}


@cli.command("data")
@click.argument("reduction")
@click.option("--n", "n", type=int, default=None, help="Size of the source problem (default: the reduction's).")
@click.option("--count", type=int, default=5, show_default=True,
              help=f"Number of seeded samples (at most {MAX_DATA_SAMPLES:,}).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed: a smaller COUNT gives the first samples of a larger one with the same SEED.")
@plugin_option
@json_option
def data_command(reduction, n, count, seed, plugins, as_json):
    """The vocabulary and COUNT samples of REDUCTION's task: the exact tokens commsim feeds the model and
    the labels a correct model outputs at the output positions (train on these; in Python,
    commsim.sample(reduction, n=..., size=..., seed=...)).

    \b
    Examples:
      commsim data index-idxl --n 8 --count 3
      commsim data disj-mqar --n 4 --count 100 --seed 1 --json
    """
    load_plugins(plugins)
    d = data_dict(reduction, n, count, seed)
    if as_json:
        emit_json(d)
        return
    vocab = d["vocabulary"]
    console.print(escape(f"{d['reduction']}, n = {d['n']}: sequences of {d['seq_len']} tokens, labels read at "
                         f"position(s) {', '.join(str(p + 1) for p in d['output_positions'])}, seed {d['seed']}"))
    console.print("vocabulary: " + escape("  ".join(f"{i}={name}" for i, name in enumerate(vocab))))
    table = Table(title=f"{d['count']} sample(s)", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("tokens")
    table.add_column("label", justify="right")
    for i, (row, label) in enumerate(zip(d["tokens"], d["labels"])):
        table.add_row(str(i), escape(" ".join(vocab[t] for t in row)), escape(" ".join(map(str, label))))
    console.print(table)
