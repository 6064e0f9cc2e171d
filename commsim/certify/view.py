"""What a certificate shows, as data: Alice's and Bob's inputs side by side, the decisive positions marked.

:func:`certificate_view` turns a :class:`~commsim.certify.types.Certificate` (or its ``to_dict()``) into a
:class:`CertificateView`: rows of (label, Alice's input, Bob's input, answer, model), each input also as
printable symbols (bits, brackets for Dyck, else numbers), the positions that decide (0-based, as in the JSON;
every text a reader sees counts positions and members from 1) and a caption
saying why they decide.  Renderers (the command line's rich table, HTML) only lay it out.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

#: printable symbols of a problem's input tokens (token id = index)
PROBLEM_SYMBOLS = {"dyck22": "()[]"}
#: a source problem's name as a reader writes it (default: upper case)
PROBLEM_NAMES = {"dyck22": "Dyck-(2,2)"}


def problem_name(problem: str) -> str:
    """"eq" -> "EQ", "dyck22" -> "Dyck-(2,2)"."""
    return PROBLEM_NAMES.get(problem, str(problem).upper())


def task_name(task: str) -> str:
    """A model task's name as a reader writes it: a short id upper-cased ("ineq" -> "INEQ"), a phrase as is."""
    task = str(task)
    return task.upper() if task.replace("-", "").replace("_", "").isalnum() and task == task.lower() else task


def _label(value) -> str:
    return "?" if value is None else str(value)


def _ordinal(index) -> str:
    """A fooling-set member's 0-based index (the JSON's) as the 1-based number a reader counts."""
    return "?" if index is None else str(int(index) + 1)


def _where(marks: list[int], positions, problem: str) -> str:
    """Where a party's input differs, counted from 1: for a Dyck string (the parties hold interleaved halves)
    at the string's own positions when the certificate says which positions the party holds, else at the
    party's input's positions."""
    if not marks:
        return "position(s) —"
    if problem == "dyck22" and positions is not None and max(marks) < len(positions):
        return "string position(s) " + ", ".join(str(int(positions[i]) + 1) for i in marks)
    return "position(s) " + ", ".join(str(i + 1) for i in marks)


def _said(name: str, value) -> str:
    """A task's output as a reader writes it: "INEQ = 1" for a short name, "1 (idxl, read at ...)" for a phrase
    (a phrase may end in a formula, which "= value" would extend)."""
    return f"{name} = {_label(value)}" if " " not in name else f"{_label(value)} ({name})"


def input_symbols(values, problem: str) -> list[str]:
    """A party's input as printable symbols (bits, brackets for Dyck, else the numbers)."""
    if values is None:
        return []
    arr = np.asarray(values).reshape(-1)
    alphabet = PROBLEM_SYMBOLS.get(problem)
    if alphabet is not None and arr.size and arr.min() >= 0 and arr.max() < len(alphabet):
        return [alphabet[int(v)] for v in arr]
    return [str(int(v)) if float(v).is_integer() else str(v) for v in arr]


@dataclass(frozen=True)
class ViewRow:
    """One row of the certificate table.  An input that is a single index (Bob's in INDEX) has ``index``
    set and no symbols; a missing input has neither."""

    label: str
    alice: Any
    bob: Any
    answer: Any
    model: Any
    alice_symbols: tuple[str, ...] = ()
    bob_symbols: tuple[str, ...] = ()
    alice_index: int | None = None
    bob_index: int | None = None
    #: the model's own output label on its task for this row's input, and a correct model's (None: not known)
    task_model: Any = None
    task_expected: Any = None


@dataclass(frozen=True)
class CertificateView:
    """The certificate as a renderer shows it: rows, decisive positions of Alice's and Bob's inputs
    (0-based), a caption saying why they decide, the model input it stands for, the explanation."""

    kind: str
    verified: bool
    rows: tuple[ViewRow, ...]
    alice_marks: list[int] = field(default_factory=list)
    bob_marks: list[int] = field(default_factory=list)
    caption: str = ""
    model_input: str | None = None
    explanation: str = ""
    #: the source problem's name ("EQ"): the ``answer`` and ``model`` columns are in its terms
    source: str = ""
    #: the model task's name ("INEQ") when the certificate carries the model's own output on it and that
    #: output is not the decoded one (a decoding that is not the identity), else "": a column of its own
    task: str = ""
    #: one sentence with both: the model's output on its task and what it decodes to in the source problem
    task_output: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


#: the labels of the row holding the certificate's own (failing) input
FAILING_LABELS = ("crossing", "fails on", "wrong on")


def _differ(x, y) -> list[int]:
    """Positions (0-based) where two inputs of the same shape differ."""
    if x is None or y is None or np.ndim(x) != 1 or np.shape(x) != np.shape(y):
        return []
    return np.flatnonzero(np.asarray(x) != np.asarray(y)).tolist()


def _row(label: str, alice, bob, answer, model, problem: str) -> ViewRow:
    """A table row, each input also as symbols (or as an index)."""
    def cell(values):
        if values is None:
            return (), None
        if np.ndim(values) == 0:
            return (), int(values)
        return tuple(input_symbols(values, problem)), None
    (a_syms, a_index), (b_syms, b_index) = cell(alice), cell(bob)
    return ViewRow(label, alice, bob, answer, model, a_syms, b_syms, a_index, b_index)


def certificate_view(cert, problem: str) -> CertificateView:
    """The view of ``cert`` (a Certificate or its dict) for a certificate on ``problem``."""
    if not isinstance(cert, dict):
        cert = cert.to_dict()
    kind, x, y = cert["kind"], cert["alice_input"], cert["bob_input"]
    details = cert.get("details") or {}
    scalar_bob = y is not None and np.ndim(y) == 0
    rows: list[ViewRow] = []
    alice_marks: list[int] = []
    bob_marks: list[int] = []
    caption = ""
    if kind == "collision":
        other = details.get("colliding_alice_input")
        rows.append(_row("fails on", x, y, cert["expected"], cert["model_output"], problem))
        if other is not None:
            rows.append(_row("same message as", other, y, details.get("other_expected"),
                             details.get("other_model_output"), problem))
        differ = _differ(x, other)
        if scalar_bob:
            alice_marks = [int(y)]
            caption = (f"Bob's index reads position {int(y) + 1} of Alice's input, where the two "
                       f"Alice inputs differ; they hand off the same {details.get('message_bits', '?')}-bit message, "
                       f"so Bob cannot tell them apart")
        else:
            alice_marks = bob_marks = differ
            where = ", ".join(str(i + 1) for i in differ)
            caption = (f"the two Alice inputs differ at position(s) {where} and hand off the same "
                       f"{details.get('message_bits', '?')}-bit message; Bob's input separates them there")
    elif kind == "kernel":   # two inputs one linear layer cannot tell apart (exact linear algebra)
        rows.append(_row("input 1", x, None, None, "same first layer", problem))
        rows.append(_row("input 2", y, None, None, "same first layer", problem))
        caption = (f"the two inputs differ by a kernel vector v of the first layer (A·v = 0 exactly), so the model's "
                   f"outputs are identical, while the correct answers differ by more than 2ε at row "
                   f"{details.get('row', '?')}: the model is off by more than ε on input "
                   f"{details.get('wrong_on_input', '?')} (values rounded here; exact in the details)")
    elif kind == "rectangle":
        m1, m2 = details.get("member_1") or {}, details.get("member_2") or {}
        first, second = (m1, m2) if np.array_equal(np.asarray(m1.get("alice")), np.asarray(x)) else (m2, m1)
        for member in (first, second):
            if member:
                two_way = member.get("bob") is not None
                rows.append(_row(f"member {_ordinal(member.get('index'))}", member.get("alice"),
                                 member.get("bob") if two_way else y,
                                 details.get("protocol_answer_on_crossing") if two_way else None,
                                 "same transcript", problem))
        rows.append(_row("crossing", x, y, cert["expected"], cert["model_output"], problem))
        alice_marks = _differ(x, second.get("alice"))
        bob_marks = _differ(y, first.get("bob")) if not scalar_bob else []
        if scalar_bob:
            alice_marks = [int(y)]
        caption = (f"the crossing takes Alice's part of member {_ordinal(first.get('index'))} and Bob's part of member "
                   f"{_ordinal(second.get('index'))}; it differs from member {_ordinal(first.get('index'))} at Bob's "
                   f"{_where(bob_marks, details.get('bob_positions'), problem)} and from member "
                   f"{_ordinal(second.get('index'))} at "
                   f"Alice's {_where(alice_marks, details.get('alice_positions'), problem)}: the rectangle "
                   f"property gives it the members' transcript, hence their answer")
    else:
        rows.append(_row("wrong on", x, y, cert["expected"], cert["model_output"], problem))
        if scalar_bob:
            alice_marks = [int(y)]
            caption = f"Bob's index reads position {int(y) + 1} of Alice's input"
        elif problem == "eq":
            alice_marks = bob_marks = _differ(x, y)
            caption = "the positions where a and b differ" if alice_marks else "a = b: no position differs"
        elif problem == "disj" and np.shape(x) == np.shape(y):
            both = np.flatnonzero((np.asarray(x) == 1) & (np.asarray(y) == 1)).tolist()
            alice_marks = bob_marks = both
            caption = "the positions in both sets" if both else "the sets are disjoint: no position is in both"
    source = problem_name(problem)
    task, task_output = "", ""
    own = details.get("task_output")
    if isinstance(own, dict) and own.get("task") is not None:
        name = task_name(own["task"])
        model, expected = own.get("model_output"), own.get("expected_output")
        if model == cert["model_output"] and expected in (None, cert["expected"]):
            task_output = (f"The decoding is the identity here: the model's own output on its task, "
                           f"{_said(name, model)}, is the {source} answer it gives.")
        else:            # the labels differ: show both, each named
            task = name
            failing = next((i for i, r in enumerate(rows) if r.label in FAILING_LABELS), None)
            if failing is not None:
                rows[failing] = replace(rows[failing], task_model=model, task_expected=expected)
            task_output = (f"On its own task the model outputs {_said(name, model)}"
                           + ("" if expected is None else f" (a correct model: {_said(name, expected)})")
                           + f"; decoded into the source problem that is {source} = {_label(cert['model_output'])}, "
                           f"where the answer is {source} = {_label(cert['expected'])}.")
    return CertificateView(kind, bool(cert.get("verified")), tuple(rows), alice_marks, bob_marks, caption,
                           details.get("model_input"), cert.get("explanation", ""), source, task, task_output)
