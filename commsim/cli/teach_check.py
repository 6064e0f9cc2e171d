"""``commsim teach check ANSWERS.json``: each answer checked by running commsim (exit 0 all right, 1 some wrong,
2 bad input)."""
from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from commsim.cli.common import console, emit_json, json_option, plugin_option
from commsim.core.errors import InputError
from commsim.plugins import load_plugins
from commsim.teach.exercises import check_answers

#: exit status when some answer is wrong (bad input is 2, as everywhere)
EXIT_WRONG = 1


def exercise_set(reg, topic: str, n: int | None, seed: int):
    """The exercises of ``topic`` at ``n`` and ``seed``, from the plugin that registered them."""
    reg.get("topic", topic, param="topic")                  # an unknown topic: the topics' list in the error
    if topic not in reg.names("exercises"):
        raise InputError(f"topic {topic!r} has no exercises (a plugin's topic may have none); topics with exercises: "
                         f"{', '.join(reg.names('exercises'))}", "topic")
    return reg.get("exercises", topic, param="topic")(n, seed)


@click.command("check")
@click.argument("answers_file", metavar="ANSWERS.json", type=click.Path(dir_okay=False))
@plugin_option
@json_option
def check_command(answers_file, plugins, as_json):
    """Check answers to a topic's exercises (`commsim teach TOPIC --exercises`) by running commsim.

    ANSWERS.json is one JSON object: {"topic": TOPIC, "seed": SEED, "n": N, "answers": {"e1": ANSWER, ...}}.
    "seed" and "n" are those the exercises were made with (--seed, --n; "n" may be left out for the topic's
    default). Each exercise says the form of its answer: a bit string "0110", an integer, true/false, a list.
    Answer any subset of the exercises.

    Every answer is decided by running the protocol, the model or the bound -- a claimed collision is run
    through the model on both inputs and the states compared, a claimed rank is computed, a "must fail" answer
    is decided by the bound -- never by comparing it with a stored solution.

    Exit status: 0 when every answer given is right, 1 when some is wrong, 2 for a file that cannot be read or
    a malformed answer (the message names the field, e.g. answers.e2).

    \b
    Examples:
      commsim teach rnn-index --exercises --seed 3
      commsim teach check answers.json
      commsim teach check answers.json --json
    """
    try:
        with open(answers_file, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise InputError(f"cannot read {answers_file}: {exc.strerror or exc}", "ANSWERS.json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{answers_file} is not JSON: {exc}", "ANSWERS.json") from None
    reg = load_plugins(plugins)
    ex_set, verdicts = check_answers(doc, lambda topic, n, seed: exercise_set(reg, topic, n, seed))
    answered = {v.ident for v in verdicts}
    unanswered = [e.ident for e in ex_set.exercises if e.ident not in answered]
    wrong = [v for v in verdicts if not v.right]
    if as_json:
        emit_json({"topic": ex_set.topic, "seed": ex_set.seed, "n": ex_set.n,
                   "results": [v.to_dict() for v in verdicts], "right": len(verdicts) - len(wrong),
                   "wrong": len(wrong), "unanswered": unanswered})
    else:
        for v in verdicts:
            mark = "[green]right[/]" if v.right else "[red]wrong[/]"
            console.print(f"{v.ident}: {mark} — {escape(v.reason)}", soft_wrap=True)
        console.print(f"{ex_set.topic} (seed {ex_set.seed}, n = {ex_set.n}): {len(verdicts) - len(wrong)} right, "
                      f"{len(wrong)} wrong" + (f", not answered: {', '.join(unanswered)}" if unanswered else ""),
                      soft_wrap=True)
    if wrong:
        sys.exit(EXIT_WRONG)   # not click's Exit: the entry point runs click without standalone mode
