"""Exercises with solutions, checked by running commsim.

A topic's exercises are generated from the lesson's own objects at a seed (the same seed, the same exercises).
Each :class:`Exercise` has a ``statement``, the ``form`` its answer takes in an answers file, a worked
``solution`` with one right ``example`` answer, and a ``checker``: a function of the answer that decides it BY
RUNNING the protocol, the model or the bound (a claimed collision is run through the model twice and the states
compared; a claimed rank is computed; a "must fail" answer is decided by the bound) -- never by comparing the
answer with a stored one.  A checker returns ``(right, reason)``; an answer of the wrong shape is an
:class:`InputError` naming its field (``answers.e2``).

Topics register their exercise builders under the ``exercises`` registry kind, as functions
``build(n: int | None, seed: int) -> ExerciseSet``.  The answers file ``commsim teach check`` reads::

    {"topic": "rnn-index", "seed": 0, "n": 6, "answers": {"e1": ["010011", "110011"], "e2": true}}

(``n`` may be left out: the topic's default size).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from commsim.core.errors import InputError

__all__ = ["Exercise", "ExerciseSet", "Verdict", "check_answers", "exercises_markdown", "exercises_plain",
           "answer_bits", "answer_int", "answer_bool", "answer_ints", "answer_keys", "answer_list", "answer_float"]


@dataclass(frozen=True)
class Verdict:
    """One checked answer: right or not, and why (what the check ran and saw)."""

    ident: str
    right: bool
    reason: str

    def to_dict(self) -> dict:
        return {"exercise": self.ident, "right": self.right, "reason": self.reason}


@dataclass
class Exercise:
    ident: str                      # "e1", "e2", ...: the key of its answer in the answers file
    title: str
    statement: str
    form: str                       # how the answer is written in the answers file (JSON)
    solution: str                   # the worked solution
    example: Any                    # one right answer (JSON), shown with the solution; never used to check
    checker: Callable[[Any], tuple[bool, str]] = field(repr=False, default=None)

    def check(self, answer: Any) -> Verdict:
        """Decide ``answer`` by running the exercise's check (an :class:`InputError` for a malformed answer)."""
        right, reason = self.checker(answer)
        return Verdict(self.ident, bool(right), reason)

    def to_dict(self, solutions: bool = False) -> dict:
        out = {"id": self.ident, "title": self.title, "statement": self.statement, "answer_form": self.form}
        if solutions:
            out |= {"solution": self.solution, "example_answer": self.example}
        return out


@dataclass
class ExerciseSet:
    topic: str
    title: str
    n: int
    seed: int
    exercises: list[Exercise]

    def get(self, ident: str) -> Exercise | None:
        return next((e for e in self.exercises if e.ident == ident), None)

    def to_dict(self, solutions: bool = False) -> dict:
        return {"topic": self.topic, "title": self.title, "n": self.n, "seed": self.seed,
                "answers_file": {"topic": self.topic, "seed": self.seed, "n": self.n,
                                 "answers": {e.ident: "..." for e in self.exercises}},
                "exercises": [e.to_dict(solutions) for e in self.exercises]}


# ---- reading answers: the shapes exercises accept ------------------------------------------------------------
def _bad(fieldname: str, expected: str, value: Any) -> InputError:
    shown = repr(value)
    return InputError(f"{fieldname}: expected {expected}, got {shown[:60]}{'...' if len(shown) > 60 else ''}",
                      fieldname)


def answer_int(value: Any, fieldname: str, low: int | None = None, high: int | None = None) -> int:
    """An integer answer (a JSON number without fraction, or a string of digits), within [low, high]."""
    if isinstance(value, bool) or not isinstance(value, (int, str, float)):
        raise _bad(fieldname, "an integer", value)
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except ValueError:
        number = None
    if number is None:
        raise _bad(fieldname, "an integer", value)
    if (low is not None and number < low) or (high is not None and number > high):
        raise _bad(fieldname, f"an integer in {low}..{high}", value)
    return number


def answer_float(value: Any, fieldname: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(fieldname, "a number", value)
    return float(value)


def answer_bool(value: Any, fieldname: str) -> bool:
    """true / false (also "yes" / "no")."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("yes", "no", "true", "false"):
        return value.strip().lower() in ("yes", "true")
    raise _bad(fieldname, "true or false", value)


def answer_bits(value: Any, fieldname: str, length: int) -> list[int]:
    """A bit string of ``length`` bits ("0110", or a list of 0/1)."""
    if isinstance(value, str):
        bits = value.replace(" ", "")
        if len(bits) == length and set(bits) <= {"0", "1"}:
            return [int(c) for c in bits]
    elif isinstance(value, list) and len(value) == length and all(v in (0, 1) and not isinstance(v, bool)
                                                                  for v in value):
        return [int(v) for v in value]
    raise _bad(fieldname, f"a string of {length} bits such as \"{'01' * (length // 2)}{'0' * (length % 2)}\"",
               value)


def answer_list(value: Any, fieldname: str, length: int | None = None) -> list:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise _bad(fieldname, f"a list of {length} items" if length is not None else "a list", value)
    return value


def answer_ints(value: Any, fieldname: str, length: int | None = None, low: int | None = None,
                high: int | None = None) -> list[int]:
    items = answer_list(value, fieldname, length)
    return [answer_int(v, f"{fieldname}[{k + 1}]", low, high) for k, v in enumerate(items)]


def answer_keys(value: Any, fieldname: str, keys: tuple[str, ...]) -> dict:
    """An object with exactly these keys."""
    if not isinstance(value, dict) or set(value) != set(keys):
        raise _bad(fieldname, "an object with the keys " + ", ".join(keys), value)
    return value


# ---- the answers file ----------------------------------------------------------------------------------------
def check_answers(doc: Any, build_for: Callable[[str, int | None, int], ExerciseSet]) -> tuple[ExerciseSet, list]:
    """Check an answers document (the parsed JSON) against the exercises ``build_for(topic, n, seed)`` makes:
    ``(exercise set, [Verdict, ...])`` in exercise order, answered exercises only.  Malformed documents and
    answers raise :class:`InputError` naming the field."""
    if not isinstance(doc, dict):
        raise _bad("answers file", "a JSON object with topic, seed and answers", doc)
    unknown = set(doc) - {"topic", "seed", "n", "answers"}
    if unknown:
        raise InputError(f"{sorted(unknown)[0]}: not a field of an answers file (fields: topic, seed, n, answers)",
                         sorted(unknown)[0])
    topic = doc.get("topic")
    if not isinstance(topic, str) or not topic:
        raise _bad("topic", "a topic name (commsim teach --list)", topic)
    seed = answer_int(doc.get("seed", 0), "seed", 0, 2 ** 32 - 1)
    n = None if doc.get("n") is None else answer_int(doc["n"], "n", 1)
    answers = doc.get("answers")
    if not isinstance(answers, dict) or not answers:
        raise _bad("answers", "a non-empty object {exercise id: answer}", answers)
    ex_set = build_for(topic, n, seed)
    for ident in answers:
        if ex_set.get(ident) is None:
            known = ", ".join(e.ident for e in ex_set.exercises)
            raise InputError(f"answers.{ident}: no such exercise for {topic} (exercises: {known})", f"answers.{ident}")
    return ex_set, [e.check(answers[e.ident]) for e in ex_set.exercises if e.ident in answers]


# ---- rendering -----------------------------------------------------------------------------------------------
def exercises_markdown(ex_set: ExerciseSet, solutions: bool = False, heading: str = "##") -> str:
    """The exercises as Markdown (a section of the lecture notes); with ``solutions`` each is followed by its
    solution (the print form: a separate solutions sheet)."""
    out = [f"{heading} {'Solutions' if solutions else 'Exercises'} (seed {ex_set.seed}, n = {ex_set.n})", "",
           f"Check answers with `commsim teach check ANSWERS.json`, where ANSWERS.json is "
           f"`{{\"topic\": \"{ex_set.topic}\", \"seed\": {ex_set.seed}, \"n\": {ex_set.n}, \"answers\": "
           f"{{\"e1\": ...}}}}`; each answer is checked by running commsim.", ""]
    for e in ex_set.exercises:
        out += [f"{heading}# Exercise {e.ident[1:]}. {e.title}", "", e.statement, "",
                f"*Answer as* `{e.ident}`: {e.form}", ""]
        if solutions:
            out += [f"**Solution.** {e.solution}", "", f"*A right answer:* `{_json(e.example)}`", ""]
    return "\n".join(out).rstrip() + "\n"


def exercises_plain(ex_set: ExerciseSet, solutions: bool = False) -> str:
    """The exercises as plain text for a terminal, a pipe or a file."""
    out = [f"{'Solutions' if solutions else 'Exercises'}: {ex_set.title} (seed {ex_set.seed}, n = {ex_set.n})",
           f"check answers: commsim teach check ANSWERS.json with {{\"topic\": \"{ex_set.topic}\", \"seed\": "
           f"{ex_set.seed}, \"n\": {ex_set.n}, \"answers\": {{\"e1\": ...}}}}", ""]
    for e in ex_set.exercises:
        out += [f"Exercise {e.ident[1:]} ({e.ident}). {e.title}", f"  {e.statement}", f"  answer as: {e.form}"]
        if solutions:
            out += [f"  solution: {e.solution}", f"  a right answer: {_json(e.example)}"]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _json(value: Any) -> str:
    import json
    return json.dumps(value)
