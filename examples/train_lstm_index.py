"""Train a small PyTorch LSTM on index lookup for a few seconds, save it, and run commsim on it.

    python examples/train_lstm_index.py                 # n = 8, about 10 seconds of training
    python examples/train_lstm_index.py --n 6 --seconds 5 --hidden 16 --out /tmp/lstm.pt

Index lookup (IdxL, Theorem 3 of [BHBK24]): tokens s_1..s_n in {0, 1}, then an index token p; the
answer is s_p.  The training data comes from ``commsim.sample`` (the public API), so the tokens and labels
are the ones ``commsim run index-idxl`` feeds the model and judges it by.  The script saves

* ``OUT``: a checkpoint ``{"config", "state_dict"}`` for the factory
  ``python:examples.factories:lstm_index:weights=OUT`` (loaded with ``weights_only=True``), and
* ``OUT`` with ``-parts`` before the suffix: the embedding, LSTM and head as standard torch.nn
  modules, for ``--model torch:FILE`` (weights-only loading),

then runs ``commsim.run("index-idxl", module)`` on the trained module (the budget verdict: 2·hidden·32 state
bits against the n-bit bound, and protocol == model bit for bit), and once more on a deliberately
squeezed copy (hidden state rounded to a 2-bit fixed point, one unit) whose 4 state bits are below
the bound, so commsim shows the input on which it must fail (the certificate).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import commsim  # noqa: E402
from examples.factories import LSTMIndex  # noqa: E402


def task_batch(n: int, size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``size`` seeded IdxL instances encoded exactly as ``commsim run index-idxl`` feeds them, with the label a
    correct model outputs at the last position (:func:`commsim.sample`)."""
    tokens, labels = commsim.sample("index-idxl", n=n, size=size, seed=seed)
    return torch.as_tensor(tokens, dtype=torch.long), torch.as_tensor(labels[:, 0], dtype=torch.long)


def train(n: int, hidden: int, seconds: float, seed: int = 0, log=print) -> tuple[LSTMIndex, float]:
    """Adam on fresh random IdxL instances until every instance is right or time runs out."""
    vocab = len(commsim.vocabulary("index-idxl", n=n))
    torch.manual_seed(seed)
    torch.set_num_threads(1)  # small batches: one thread is fastest, and much faster on a busy machine
    model = LSTMIndex(vocab, hidden=hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    start, step, accuracy = time.time(), 0, 0.0
    while time.time() - start < seconds:
        tokens, answers = task_batch(n, 256, seed=1_000_000 * seed + step)
        loss = loss_fn(model(tokens)[:, -1], answers)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        if step % 50 == 0:
            with torch.no_grad():
                tokens, answers = task_batch(n, 2048, seed=999_999_999 - step)
                accuracy = float((model(tokens)[:, -1].argmax(-1) == answers).float().mean())
            log(f"  step {step:5d}  loss {loss.item():.4f}  accuracy {accuracy:.4f}  ({time.time() - start:.1f} s)")
            if accuracy == 1.0 and loss.item() < 0.01:
                break
    return model.eval(), accuracy


def show(report: commsim.Report) -> int:
    """Print a run's verdict (``report.to_json()`` has everything); 1 when the protocol was not exact."""
    print(f"\ncommsim.run({report.reduction!r}, {report.model!r}, n={report.n}): {report.verdict()}")
    print(f"  model accuracy {report.model_accuracy:.4f}, protocol == model: {report.protocol_matches_model}")
    if report.certificate is not None:
        print("  certificate: " + report.certificate.explanation)
    return 0 if report.protocol_matches_model else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=8, help="INDEX size n (sequence length n + 1)")
    parser.add_argument("--hidden", type=int, default=32, help="LSTM hidden units m")
    parser.add_argument("--seconds", type=float, default=10.0, help="training time budget")
    parser.add_argument("--out", default="lstm_index.pt", help="checkpoint path")
    parser.add_argument("--no-run", action="store_true", help="only train and save")
    args = parser.parse_args(argv)

    print(f"training an LSTM (hidden {args.hidden}) on index lookup, n = {args.n}, for up to {args.seconds:g} s")
    model, accuracy = train(args.n, args.hidden, args.seconds)
    out = Path(args.out).resolve()
    torch.save({"config": model.config, "state_dict": model.state_dict()}, out)
    parts = out.with_name(out.stem + "-parts" + out.suffix)
    from protocols.adapters.torch import save_parts
    save_parts(str(parts), core=model.rnn, embedding=model.embed, head=model.head)
    print(f"saved {out} (factory checkpoint) and {parts} (standard modules); accuracy {accuracy:.4f}")
    if args.no_run:
        return 0
    status = show(commsim.run("index-idxl", model, n=args.n))
    # a squeezed model: one LSTM unit whose state (h, c) is rounded to 2-bit fixed point -- 4 state bits,
    # below the n-bit bound, so it must fail somewhere, and commsim shows where
    print(f"\ntraining a one-unit LSTM for {min(args.seconds, 3.0):g} s (it cannot store {args.n} bits in 4)")
    tiny, _ = train(args.n, 1, min(args.seconds, 3.0), log=lambda line: None)
    tiny_parts = out.with_name(out.stem + "-tiny" + out.suffix)
    save_parts(str(tiny_parts), core=tiny.rnn, embedding=tiny.embed, head=tiny.head)
    print(f"the same from the command line: commsim run index-idxl --model torch:{tiny_parts}:precision=2,frac=1 "
          f"--n {args.n} --instances 64")
    status |= show(commsim.run("index-idxl", f"torch:{tiny_parts}:precision=2,frac=1", n=args.n, instances=64))
    return status


if __name__ == "__main__":
    sys.exit(main())
