"""The public Python API of DESIGN section 4 and of the manual (docs/guide/python-api.md): run_reduction, make_model,
load_plugins, Report.to_dict/to_json, and ``python -m commsim``."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import commsim
from commsim import Report, load_plugins, make_model, run_reduction


def test_run_reduction_returns_a_report_with_the_contract_keys():
    report = run_reduction("index-idxl", "memorize:capacity=7", n=8)
    assert isinstance(report, Report)
    # the memorizing model keeps 7 of the 8 bits: one bit short of Theorem 3's m*p >= N
    assert (report.bits_used, report.lower_bound.bits, report.budget_ok) == (7, 8, False)
    assert report.certificate is not None and report.certificate.verified
    data = json.loads(report.to_json())
    assert data == json.loads(json.dumps(commsim.core.jsonable.to_jsonable(report.to_dict())))
    for key in ("reduction", "bits_used", "lower_bound_bits", "bound_applies", "budget_ok", "model_correct",
                "protocol_matches_model", "certificate", "bits_by_direction", "bits_formula"):
        assert key in data
    assert json.loads(commsim.run("index-idxl", "memorize:capacity=7", n=8).to_json()) == data   # run_reduction


def test_run_json_equals_report_to_json(capsys):
    from commsim.cli import main
    main(["run", "eq-ineq", "--model", "memorize:capacity=5", "--n", "6", "--json"])
    printed = json.loads(capsys.readouterr().out)
    report = run_reduction("eq-ineq", "memorize:capacity=5", n=6)
    assert printed == json.loads(report.to_json())


def test_make_model_from_a_spec_and_from_a_model_object():
    model = make_model("elman:width=3,precision=8,frac=3,seed=1", vocab_size=4)
    assert model.width == 3 and model.precision == 8
    assert make_model(model) is model          # a model a simulator accepts is its own model
    report = run_reduction("eq-ineq", model, n=3, instances=16)
    assert report.protocol == "rnn-handoff" and report.bits_used == 3 * 8


def test_make_model_adapts_a_torch_module():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    parts = {"embedding": torch.nn.Embedding(8, 4), "core": torch.nn.GRU(4, 5, batch_first=True),
             "head": torch.nn.Linear(5, 2)}
    report = run_reduction("index-idxl", parts, n=6, instances=32)
    assert report.protocol == "rnn-handoff" and report.protocol_matches_model
    assert report.bits_used == 5 * 32           # a float32 GRU hands off 5 numbers of 32 bits
    gru = make_model(torch.nn.GRU(3, 4, batch_first=True), vocab_size=3)
    assert gru.state_bits == 4 * 32


def test_an_object_nothing_adapts_is_refused_with_the_reason():
    with pytest.raises(commsim.NotApplicable, match="no registered simulator"):
        run_reduction("index-idxl", object(), n=4)


def test_load_plugins_lists_every_kind():
    registry = load_plugins()
    for kind in ("reduction", "model", "simulator", "adapter", "topic", "separation", "cc-protocol"):
        assert registry.names(kind), kind


def test_python_m_commsim():
    done = subprocess.run([sys.executable, "-m", "commsim", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("commsim, version")


PYTHON_API_PAGE = Path(__file__).resolve().parents[1] / "docs/guide/python-api.md"     # the manual's Python API


def test_the_manual_python_example_runs_and_says_what_it_prints():
    text = PYTHON_API_PAGE.read_text()
    start = text.index("```python", text.index("# The Python API")) + len("```python")
    code = text[start:text.index("```", start)]
    scope: dict = {}
    exec(compile(code, "python-api.md", "exec"), scope)      # noqa: S102 - the manual's own example
    first = run_reduction("index-idxl", "memorize:capacity=7", n=8)
    assert (first.bits_used, first.lower_bound.bits, first.budget_ok) == (7, 8, False)   # as its comment says
    assert scope["report"].reduction == "eq-ineq" and scope["report"].protocol_matches_model


def test_the_manual_notebook_example_trains_runs_and_displays():
    """The manual's notebook example: train on commsim.sample data, commsim.run the module, display."""
    pytest.importorskip("torch")
    text = PYTHON_API_PAGE.read_text()
    start = text.index("```python", text.index("## In a notebook")) + len("```python")
    code = text[start:text.index("```", start)]
    scope: dict = {}
    exec(compile(code, "python-api.md", "exec"), scope)      # noqa: S102 - the manual's own example
    report, row = scope["report"], scope["row"]
    assert report.protocol == "rnn-handoff" and report.protocol_matches_model
    assert report.bits_used == 16 * 32 and report.budget_ok                       # a float32 GRU of 16 units
    assert report.model_accuracy == 1.0 and report.certificate is None           # trained to exactness
    assert row["bits_used"] == report.bits_used and row["budget_ok"] is True
    shown = report._repr_html_()
    assert "not ruled out" in shown and "<table>" in shown and "index-idxl" in shown


def test_vocabulary_names_every_token_sample_uses():
    tokens, _ = commsim.sample("index-idxl", n=6, size=500, seed=1)
    names = commsim.vocabulary("index-idxl", n=6)
    assert tokens.max() < len(names) and len(set(names)) == len(names)
    with pytest.raises(commsim.InputError, match="n"):
        commsim.vocabulary("index-idxl", n=0)


def test_report_row_and_html_escape_and_say_the_verdict():
    report = run_reduction("index-idxl", "memorize:capacity=7", n=8)
    row = report.to_row()
    assert row["certificate"] is True and row["budget_ok"] is False and row["lower_bound_bits"] == 8
    assert all(v is None or isinstance(v, (int, float, str, bool)) for v in row.values())
    assert "must fail" in report.verdict() and "&lt;" in report._repr_html_()


# ---- a module object's number format in Python (issue 24, defect 4) ---------------------------------------
def _gru():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return {"embedding": torch.nn.Embedding(8, 4), "core": torch.nn.GRU(4, 2, batch_first=True),
            "head": torch.nn.Linear(2, 2)}


@pytest.mark.parametrize("keywords, name", [({"precision": 2}, "fixed2.1"), ({"precision": "2"}, "fixed2.1"),
                                            ({"precision": 8, "frac": 3}, "fixed8.3"),
                                            ({"precision": "fixed8.3"}, "fixed8.3"),
                                            ({"precision": "bfloat16"}, "bfloat16"), ({"dtype": "float16"}, "float16")])
def test_make_model_takes_a_module_objects_precision(keywords, name):
    model = make_model(_gru(), vocab_size=8, **keywords)       # on main: precision dropped, 2 x 32 bits
    assert model.format.name == name and model.state_bits == 2 * model.format.bits


def test_make_model_refuses_unknown_keywords_naming_them():
    with pytest.raises(commsim.InputError, match="precison") as info:
        make_model(_gru(), vocab_size=8, precison=2)
    assert info.value.param == "precison" and "valid keywords" in str(info.value) and "precision" in str(info.value)
    with pytest.raises(commsim.InputError, match="inside it") as info:      # a spec names its format itself
        make_model("elman:width=2", vocab_size=4, precision=8)
    assert info.value.param == "precision"


@pytest.mark.parametrize("keywords, param", [({"frac": 2}, "frac"), ({"precision": 8, "dtype": "float16"}, "dtype"),
                                             ({"precision": "fixed99"}, "precision"), ({"precision": 1.5}, "precision"),
                                             ({"dtype": "float8"}, "dtype")])
def test_make_model_refuses_a_bad_format_naming_the_keyword(keywords, param):
    with pytest.raises(commsim.InputError) as info:
        make_model(_gru(), vocab_size=8, **keywords)
    assert info.value.param == param


def test_a_commsim_model_keeps_its_own_format():
    model = make_model("elman:width=2,precision=8", vocab_size=4)
    with pytest.raises(commsim.InputError, match="fixes its own number format") as info:
        make_model(model, precision=4)
    assert info.value.param == "precision"


@pytest.mark.parametrize("bad", [None, 5, 2.5, True, object()])
def test_make_model_refuses_what_is_not_a_model(bad):
    with pytest.raises(commsim.InputError) as info:        # on main: the argument came back unchanged
        make_model(bad)
    assert info.value.param == "model"


def test_run_takes_a_module_objects_precision():
    parts = _gru()
    report = commsim.run("index-idxl", parts, n=4, instances=16, certify=False, precision=2)   # main: TypeError
    assert report.bits_used == 2 * 2 and report.protocol_matches_model
    assert report.torch_agreement["ok"] is None                                # fixed point: not judged
    assert commsim.run("index-idxl", parts, n=4, instances=16, certify=False, dtype="bfloat16").bits_used == 2 * 16
    with pytest.raises(commsim.InputError, match="spec string") as info:
        commsim.run("index-idxl", "lstm:width=2", n=4, precision=2)
    assert info.value.param == "precision"


_RUNS = {
    "run with precision": lambda parts: commsim.run("index-idxl", parts, n=4, instances=8, certify=False, precision=2),
    "run_reduction": lambda parts: run_reduction("index-idxl", parts, 4, instances=8, certify=False),
    "run_instances": lambda parts: commsim.run_instances("index-idxl", parts, 4, [[0, 1, 1, 0]], [2]),
}


@pytest.mark.parametrize("path", sorted(_RUNS))
def test_a_run_gives_the_modules_back_in_their_own_train_eval_mode(path):
    """The run uses eval mode (no dropout); afterwards every module and submodule has its own mode again."""
    torch = pytest.importorskip("torch")
    parts = _gru()
    parts["head"] = torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Linear(2, 2))
    parts["core"].eval()
    parts["head"][1].eval()                            # a submodule whose mode differs from its parent's
    before = {name: [m.training for m in part.modules()] for name, part in parts.items()}
    assert True in before["head"] and True in before["embedding"]
    report = _RUNS[path](parts)                         # on main: every module left in eval mode
    assert report.protocol_matches_model
    assert {name: [m.training for m in part.modules()] for name, part in parts.items()} == before


# ---- saving the run page from Python (issue 26, item 6) -------------------------------------------------------
def test_save_html_writes_the_run_page_through_the_safe_writer(tmp_path):
    pytest.importorskip("jinja2")
    pytest.importorskip("latex2mathml")
    from commsim.render.reports import run_page
    report = run_reduction("index-idxl", "memorize:capacity=7", n=8)
    target = tmp_path / "run.html"
    commsim.save_html(report, target, command="commsim run index-idxl --model memorize:capacity=7 --n 8")
    text = target.read_text(encoding="utf-8")
    clip_ids = re.compile(r"\bp[0-9a-f]{10}\b")                                   # matplotlib's random clip-path ids
    same = run_page(report, "commsim run index-idxl --model memorize:capacity=7 --n 8")
    assert clip_ids.sub("p", text) == clip_ids.sub("p", same)
    assert "commsim run index-idxl" in text and "<math" in text and "<svg" in text
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]                 # no temporary file left behind
    commsim.save_html(report, str(target))                                       # overwrites; default footer
    assert "commsim.save_html(report, " in target.read_text(encoding="utf-8")


def test_report_to_html_is_save_html(tmp_path, monkeypatch):
    """DESIGN section 4's Report.to_html(path): the page commsim.save_html writes, through the same code."""
    pytest.importorskip("jinja2")
    pytest.importorskip("latex2mathml")
    report = run_reduction("index-idxl", "memorize:capacity=7", n=4, instances=8, certify=False)
    calls = []
    from commsim.runs import report as report_module
    assert report_module.html_writer is commsim.save_html           # set when the package loads
    monkeypatch.setattr(report_module, "html_writer", lambda *a, **k: calls.append((a, k)))
    report.to_html(tmp_path / "run.html", command="made by me")
    assert calls == [((report, tmp_path / "run.html"), {"command": "made by me"})]
    monkeypatch.undo()
    report.to_html(tmp_path / "run.html")
    text = (tmp_path / "run.html").read_text(encoding="utf-8")
    assert "report.to_html(" in text and "<svg" in text
    with pytest.raises(commsim.InputError) as info:
        report.to_html(tmp_path / "run.txt")
    assert info.value.param == "path" and not (tmp_path / "run.txt").exists()


@pytest.mark.parametrize("args, param", [
    (({"not": "a report"}, "x.html"), "report"),
    ((None, "x.html"), "report"),
    (("REPORT", "x.txt"), "path"),
    (("REPORT", "missing-dir/x.html"), "path"),
    (("REPORT", 3), "path"),
    (("REPORT", "x.html", 5), "command"),
])
def test_save_html_refuses_bad_arguments_naming_them_and_writes_nothing(tmp_path, monkeypatch, args, param):
    monkeypatch.chdir(tmp_path)
    report = run_reduction("index-idxl", "memorize:capacity=7", n=4, instances=8, certify=False)
    report_arg, path, *command = [report if a == "REPORT" else a for a in args]
    with pytest.raises(commsim.InputError) as info:
        commsim.save_html(report_arg, path, command=command[0] if command else None)
    assert info.value.param == param
    assert list(tmp_path.iterdir()) == []
