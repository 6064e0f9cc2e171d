"""A fuzz of the command line and the Python API: bad invocations generated from every command's parameters
(hypothesis strategies over the click parameter types) run under a 2 GB address-space limit and 5 s each.
None may exit 1 or hang; a refusal is exit 2 with one line on stderr and no traceback; ``--json`` prints
exactly one JSON object (with ``error`` when the command failed).  Every wrong value of every parameter runs
once -- among them the model specs and output targets that once hung or ate memory (FIFOs, devices, .npz
headers claiming 74.5 GiB, GPT-2 configs, python: factories calling sys.exit; fuzz_worker.HAZARD_*), on every
command that takes them (run, sweep, data, matrix, --html everywhere) -- then the targeted cases (randomized
cc, separate) and each wrong value of each Python API parameter (commsim.run, sample, vocabulary, sweep,
load_plugins: InputError, never another exception); then hypothesis draws 150 command lines (seeded);
``pytest -m slow`` draws 2000."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from fuzz_worker import HAZARD_MODELS, HAZARD_TARGETS, Worker, make_hazard_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commsim.cli import cli
from commsim.plugins import load_plugins

BAD_INTS = ["-1", "0", "-7", "abc", "1.5", "", "1e9", "1000000000", "10**30", "99999999999999999999999999",
            "-99999999999999999999"]
BAD_BY_OPTION = {
    "--instances": ["0", "-3", "abc", "", "1000000000000", "1e3", "all5", "10**12"],
    "--model": ["elman:widht8", "lstm:width:precision=4", "gru:nonsense", "memorize:foo", "elman:", "nope",
                "elman:vocab=1000000000", "elman:classes=1000000000", "attention:heads=100000,width=1000",
                "attention:heads=1000000000000000000000000000000", "attention:positions=1000000000",
                "attention:seed=-1", "elman:seed=-1", "memorize:capacity=1000000000000000000000000000000",
                "construct:idxl:n=1000000000", "construct:lookup:length=1000000000", "attention:frac=3",
                "elman:precision=0", "elman:width=-3", ":::", "=", "python:", "torch:", "construct:idxl:bar",
                *HAZARD_MODELS],
    "--protocol": ["nope", "", "one-way;", "TWO-WAY"],
    "--arch": ["gpu", "", "RNN", "rnn attention"],
    "--task": ["nope", "", "index", "dyck22"],
    "--n-range": ["0:8", "-5:8", "1:1000000000:1", "8:1", "a:b", "", "1,2,x", "1:2:0", "1:10**9"],
    "--gamma": ["0", "-1", "1e-300", "2", "nan", "inf", "abc"],
    "--plugin": ["", "../etc", "no.such.module", "/tmp"],
    "--format": ["pdf", "", "HTML5"],
    "--seed": ["-1", "abc", "1e3", "99999999999999999999999", "-99999999999999999999"],
    "--members": ["-1", "1000000000", "abc"],
    "--restarts": ["-1", "abc", "1000000000"],
}
JUNK_NAMES = ["nope", "", "index-", "DYCK22", "run", "../x", "eq ineq", "--json"]
#: a valid, small value per option, so that each invocation is wrong in exactly one place (None: leave out)
GOOD = {"--n": "4", "--instances": "8", "--reduction": "index-idxl", "--protocol": "one-way", "--arch": "rnn", "--task": "eq-ineq",
        "--width": "4", "--precision": "8", "--heads": "1", "--dim": "8", "--seed": "0", "--n-range": "4:16",
        "--gamma": "0.25", "--format": "text", "--members": "2", "--restarts": "1", "--model": None, "--plugin": None,
        "--plot": None, "--out": None, "--dot": None}


def _names(param: click.Parameter) -> list[str]:
    """Valid values of a positional argument (its choices, or the registry's names for it)."""
    if isinstance(param.type, click.Choice):
        return list(param.type.choices)
    registry = load_plugins()
    return {"reduction": registry.names("reduction"), "task": registry.names("separation"),
            "topic": registry.names("topic")}.get(param.name, ["x"])


def _bad_paths(tmp: Path) -> list[str]:
    """Output paths that cannot be written as regular files: empty, a directory, a missing directory, a FIFO,
    a device, a link to one, a trailing separator (:data:`fuzz_worker.HAZARD_TARGETS`, relative to the
    worker's folder)."""
    (tmp / "adir").mkdir(exist_ok=True)
    return ["", str(tmp / "adir"), str(tmp / "missing" / "out.txt"), "/proc/commsim-fuzz/out.txt", *HAZARD_TARGETS]


#: bad values aimed at what the generic pass leaves at a valid default: randomized cc protocols' --error,
#: separations' options (each invocation wrong in one place)
TARGETED = [
    *[["cc", problem, "--n", "8", "--protocol", protocol, "--error", error, "--json"]
      for problem, protocol in (("eq", "fingerprint"), ("index", "sample"), ("disj", "inner-product"))
      for error in ("0", "-1", "1", "1e-300", "nan", "inf", "abc")],
    *[["cc", "eq", "--n", n, "--protocol", "fingerprint", "--instances", "8", "--json"]
      for n in ("100000000", "0", "1e9")],
    *[["separate", task, "--n", "8", "--gamma", gamma, "--json"]
      for task in ("idxl", "eq", "disj") for gamma in ("1e-300", "1e-30", "0.05")],
    *[["data", "index-idxl", "--n", "4", "--count", count, "--json"] for count in ("1000000000000", "-1", "0")],
    *[["sweep", "--reduction", "index-idxl", "--model", model, "--n", "4", "--json"] for model in HAZARD_MODELS],
    *[[command, *rest, "--html", target] for target in HAZARD_TARGETS
      for command, *rest in (("run", "index-idxl", "--n", "4"), ("budget", "--arch", "rnn", "--width", "4",
                             "--precision", "8", "--task", "index-idxl"), ("separate", "idxl", "--n", "8"),
                             ("cc", "index", "--n", "8", "--protocol", "one-way"))],
]

#: junk for each Python API parameter, by worker token (fuzz_worker.API_VALUES) or as a JSON value
API_JUNK = ["@none", "@object", "@getattr", "@bytes", "@big", "@tuple", "@set", 5, -1, 2.5, True, "", "nope", [],
            {"a": 1}]
#: (function, the valid call, the parameter made wrong): each junk value goes in that one place
API_SLOTS = [("run", ["index-idxl", "memorize"], {"n": 4}, slot) for slot in
             (0, 1, "n", "instances", "seed", "audit", "certify", "progress")] + [
    ("sample", ["index-idxl"], {"n": 4}, slot) for slot in (0, "n", "size", "seed")] + [
    ("vocabulary", ["index-idxl"], {"n": 4}, slot) for slot in (0, "n")] + [
    ("sweep", ["index-idxl", "memorize"], {"n": 4}, slot) for slot in (0, 1, "n", "seeds", "write", "progress")] + [
    ("load_plugins", [[]], {}, 0)]
#: (function, parameter, junk) where the junk is a valid value: the default model or size, no callback or True (a
#: progress bar), 5 for a size or a seed, a set or tuple of names/sizes, an empty list of plugins or of models (the
#: default model)
API_VALID = {(name, str(slot), json.dumps(junk)) for name, slot, junk in [
    ("run", 1, "@none"), ("run", "n", "@none"), ("run", "n", 5), ("run", "instances", "@none"), ("run", "instances", 5),
    ("run", "seed", 5), ("run", "certify", True), ("run", "progress", "@none"),
    ("sample", "n", "@none"), ("sample", "n", 5), ("sample", "size", 5), ("sample", "seed", 5),
    ("vocabulary", "n", "@none"), ("vocabulary", "n", 5),
    ("sweep", 0, "@set"), ("sweep", 1, "@none"), ("sweep", 1, []), ("sweep", "n", "@none"), ("sweep", "n", 5),
    ("sweep", "n", "@tuple"), ("sweep", "seeds", 5), ("sweep", "seeds", "@tuple"), ("sweep", "write", "@none"),
    ("sweep", "progress", "@none"), ("run", "progress", True), ("sweep", "progress", True), ("load_plugins", 0, [])]}


def api_cases() -> list[dict]:
    """Each junk value of :data:`API_JUNK` in each place of :data:`API_SLOTS`, the rest of the call valid."""
    cases = []
    for name, args, kwargs, slot in API_SLOTS:
        for junk in API_JUNK:
            call_args, call_kwargs = list(args), dict(kwargs)
            if isinstance(slot, int):
                call_args[slot] = junk
            else:
                call_kwargs[slot] = junk
            if (name, slot, junk) != ("run", "audit", True):     # valid, and two processes: 2 s
                cases.append({"api": name, "args": call_args, "kwargs": call_kwargs, "slot": slot, "junk": junk})
    return cases


#: every (command, parameter that takes a value) pair, and (command, None) for an unknown option
_PAIRS = sorted([(name, p.name) for name, c in cli.commands.items() for p in c.params
                 if not getattr(p, "is_flag", False) and p.name != "as_json"] + [(name, None) for name in cli.commands],
                key=lambda pair: (pair[0], pair[1] or ""))


def _bad_values(param: click.Option, paths: list[str]) -> list[str]:
    """Wrong values for one option, by its flag or its click type."""
    flag = param.opts[0]
    if flag in BAD_BY_OPTION:
        return BAD_BY_OPTION[flag]
    if flag in ("--plot", "--out", "--dot"):
        return paths
    if isinstance(param.type, (click.types.IntParamType, click.IntRange)):
        return BAD_INTS
    if isinstance(param.type, click.Choice):
        return ["nope", ""]
    return JUNK_NAMES


def every_bad_value(tmp: Path) -> list[list[str]]:
    """Each wrong value of each parameter of each command once, everything else valid and small."""
    paths, out = _bad_paths(tmp), []
    for name, bad_name in _PAIRS:
        command = cli.commands[name]
        bad = next((p for p in command.params if p.name == bad_name), None)
        values = (JUNK_NAMES if isinstance(bad, click.Argument) else _bad_values(bad, paths)) if bad else [None]
        for value in values:
            argv = [name]
            for param in command.params:
                if isinstance(param, click.Argument):
                    argv.append(value if param is bad else _names(param)[0])
                elif param is bad:
                    argv += [param.opts[0], value]
                elif (param.required or param.opts[0] == "--n") and GOOD.get(param.opts[0]) is not None:
                    argv += [param.opts[0], GOOD[param.opts[0]]]
            out.append(argv + (["--no-such-option", "1"] if bad is None else []) + ["--json"])
    return out


def invocation(tmp: Path):
    """A strategy for one bad command line: a command, its positional argument, its required options (and
    ``--n``), a few optional ones -- every value valid and small except exactly one, drawn from the wrong
    values of that parameter's type (so each defect shows on its own, and no invocation runs a long job)."""
    paths = _bad_paths(tmp)

    @st.composite
    def build(draw):
        # the one wrong place first, uniformly over every (command, parameter) pair, so that all are reached
        name, bad_name = draw(st.sampled_from(_PAIRS))
        command = cli.commands[name]
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        options = [p for p in command.params if isinstance(p, click.Option) and p.opts[0] != "--json"]
        bad = next((p for p in command.params if p.name == bad_name), None)
        # the options given: the required ones, --n whenever there is one (no long default runs), the bad
        # one, and a few more
        given = [p for p in options if p.required or p.opts[0] == "--n" or p is bad]
        given += draw(st.lists(st.sampled_from([p for p in options if p not in given] or [None]), max_size=3,
                               unique=True))
        given = [p for p in given if p is not None]
        argv = [name]
        for param in arguments:
            argv.append(draw(st.sampled_from(JUNK_NAMES)) if param is bad else draw(st.sampled_from(_names(param))))
        for param in given:
            flag = param.opts[0]
            if param.is_flag:
                argv.append(flag)
            elif param is bad:
                argv += [flag, draw(st.sampled_from(_bad_values(param, paths)))]
            elif GOOD.get(flag) is not None:
                argv += [flag, GOOD[flag]]
        if bad is None:
            argv += ["--no-such-option", "1"]
        if draw(st.booleans()):
            argv.append("--json")
        return argv

    return build()


def _api_problems(case: dict, result: dict) -> list[str]:
    """An API call may return (where the junk is a valid value: :data:`API_VALID`) or raise InputError."""
    code = result["code"]
    shown = f"commsim.{case['api']}(*{result['argv'][1]}, **{result['argv'][2]})"
    if code == 2:
        return []
    if code == 0:
        valid = (case["api"], str(case["slot"]), json.dumps(case["junk"])) in API_VALID
        return [] if valid else [f"accepted: {shown}"]
    return [f"{code}: {shown}: {result['stderr'].strip()[:200]}"]


def _problems(results: list[dict]) -> list[str]:
    """Every way a result breaks the contract, as one line each."""
    found = []
    for r in results:
        argv, code, out, err = " ".join(r["argv"]), r["code"], r["stdout"], r["stderr"]
        if code not in (0, 2):
            found.append(f"exit {code}: commsim {argv}: {err.strip()[:200]}")
        if "Traceback" in err or "Traceback" in out:    # with its end, to say where it came from
            found.append(f"traceback: commsim {argv} ({r['seconds']} s): ...{(err or out).strip()[-800:]}")
        if code == 2 and len(err.strip().splitlines()) != 1:
            found.append(f"{len(err.strip().splitlines())} stderr lines: commsim {argv}")
        if "--json" in r["argv"] and code in (0, 2):
            try:
                data = json.loads(out)
            except ValueError:
                found.append(f"--json printed no single JSON object: commsim {argv}: {out[:120]!r}")
                continue
            if code == 2 and not (isinstance(data, dict) and "error" in data):
                found.append(f"--json error without an 'error' key: commsim {argv}")
    return found


def _fuzz(count: int, tmp: Path) -> None:
    make_hazard_files(tmp)
    worker = Worker(tmp)
    seen: list[dict] = []

    @settings(max_examples=count, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(invocation(tmp))
    def check(argv):
        result = worker.run(argv)
        seen.append(result)
        problems = _problems([result])
        assert not problems, "\n".join(problems)

    try:
        problems = []
        for argv in every_bad_value(tmp) + TARGETED:         # every wrong value of every parameter once
            result = worker.run(argv)
            seen.append(result)
            problems += _problems([result])
        for case in api_cases():                             # every junk value in every API parameter once
            problems += _api_problems(case, worker.run({key: case[key] for key in ("api", "args", "kwargs")}))
        assert not problems, "\n".join(problems)
        check()                                             # then `count` drawn combinations
    finally:
        worker.close()
    reached = {(r["argv"][0], a) for r in seen for a in r["argv"][1:] if a.startswith("--")}
    every = {(n, p.opts[0]) for n, c in cli.commands.items() for p in c.params
             if isinstance(p, click.Option) and not p.is_flag}
    assert len(seen) >= count and reached >= every, f"options never fuzzed: {sorted(every - reached)}"


def test_fuzz_bad_invocations_and_api_calls(tmp_path):
    _fuzz(150, tmp_path)


@pytest.mark.slow
def test_fuzz_2000_bad_invocations(tmp_path):
    _fuzz(2000, tmp_path)


# ---- hostile result tables and a second writer --------------------------------------------------------------
def _hostile_tables(tmp: Path) -> dict[str, bytes | None]:
    """Files no sweep or replicate may resume from (name -> content; None: made here, sparse): a list in a parquet
    cell, a sparse 6 GB CSV, JSON nested 100 000 deep, NUL bytes, key columns without rows, a mapping in a cell,
    a row whose key is a path, UTF-16 text."""
    import io

    import pandas as pd
    columns = ["cell", "experiment", "scale", "model", "layers", "width", "N", "seed", "error", "reduction", "n",
               "instances"]
    row = dict.fromkeys(columns, 1) | {"cell": "0123456789abcdef", "experiment": "bhbk24-index", "scale": "quick",
                                       "error": None, "model": "lstm", "reduction": "index-idxl", "instances": "all"}
    listed = io.BytesIO()
    pd.DataFrame([row | {"accuracy": [0.5, 0.7]}]).to_parquet(listed, index=False)
    with open(tmp / "t-sparse.csv", "wb") as fh:
        fh.truncate(6 << 30)
    return {"t-list.parquet": listed.getvalue(), "t-sparse.csv": None,
            "t-deep.json": b"[" * 100_000 + b"]" * 100_000, "t-nul.csv": b"\0" * 4096,
            "t-header.csv": (",".join(columns) + "\n").encode(),
            "t-dict.json": json.dumps([row | {"accuracy": {"a": 1}}]).encode(),
            "t-path-key.csv": (",".join(columns) + "\n" + ",".join(["../../etc/passwd"] + ["1"] * 11) + "\n").encode(),
            "t-utf16.csv": (",".join(columns) + "\n").encode("utf-16")}


def test_fuzz_hostile_tables_and_a_second_writer(tmp_path):
    """Every hostile table, as --out of sweep and of replicate: exit 2 with one line, the file unchanged; and a
    table whose lock this process holds: exit 2 naming this process."""
    from commsim.batch.table import table_lock
    tables = _hostile_tables(tmp_path)
    for name, content in tables.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
    (tmp_path / "held.csv").write_bytes(b"")
    worker = Worker(tmp_path)
    problems = []
    commands = (["sweep", "--reduction", "index-idxl", "--n", "4"], ["replicate", "bhbk24-index"])
    try:
        for name in tables:
            before = os.stat(tmp_path / name)
            for command in commands:
                result = worker.run([*command, "--out", name, "--json"])
                problems += _problems([result])
                if result["code"] != 2 or "--out" not in result["stderr"]:
                    problems.append(f"{result['code']}: commsim {' '.join(result['argv'])}: {result['stderr'][:200]}")
            after = os.stat(tmp_path / name)
            if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                problems.append(f"{name} was rewritten")
        with table_lock(tmp_path / "held.csv"):
            for command in commands:
                result = worker.run([*command, "--out", "held.csv", "--json"])
                if result["code"] != 2 or f"(pid {os.getpid()}," not in result["stderr"]:
                    problems.append(f"a second writer: {result['code']}: {result['stderr'][:200]}")
    finally:
        worker.close()
    assert not problems, "\n".join(problems)
