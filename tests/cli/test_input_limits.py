"""Issue 29 items 6-10 and issue 24 defect 6: no input hangs, eats memory or exits 1.

Inputs that used to hang (a FIFO or a device named in a spec) or allocate without bound (an .npz header
claiming 10^10 numbers, a GPT-2 config 52 GB wide, 10^9 heads, gamma = 1e-30) run in the fuzz worker, under
its 2 GB address-space limit and its time limits (5 s of CPU, 120 s of wall time), so that a regression fails as "timeout"/"memory" instead of
hanging the suite.  Each must exit 2 with one line naming what is wrong (and one JSON object under --json)."""
from __future__ import annotations

import json
import os
import sys

import pytest
from cli_helpers import run_main
from fuzz_worker import Worker, make_hazard_files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A folder with FIFOs, crafted weights and configs (:func:`fuzz_worker.make_hazard_files`); the worker
    runs there."""
    return make_hazard_files(tmp_path_factory.mktemp("inputs"))


@pytest.fixture(scope="module")
def worker(files):
    w = Worker(files)
    yield w
    w.close()


def _refused(result: dict, *needles: str) -> str:
    """The error line of a result that must be a refusal (exit 2, one line, one JSON object)."""
    code, out, err = result["code"], result["stdout"], result["stderr"]
    assert code == 2, (result["argv"], code, err[-300:])
    assert err.startswith("Error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    line = json.loads(out)["error"]
    for needle in needles:
        assert needle in line, (needle, line)
    return line


# ---- 29.6: a FIFO or a device named in a spec is refused before it is opened ------------------------------
@pytest.mark.parametrize("spec, needles", [
    ("elman:weights=fifo.npz", ("weights=", "pipe")),
    ("attention:weights=fifo.npz", ("weights=", "pipe")),
    ("hf-gpt2:config=fifo.json", ("config=", "pipe")),
    ("hf-gpt2:config=/dev/zero", ("config=", "device")),
    ("python:fifo.py:f", ("python:", "pipe")),
    ("torch:fifo.pt", ("torch:", "pipe")),
])
def test_a_pipe_or_a_device_in_a_spec_is_refused_naming_its_key(worker, spec, needles):
    _refused(worker.run(["run", "index-idxl", "--model", spec, "--n", "4", "--json"]), *needles)


def test_a_model_directory_holding_a_pipe_is_refused(worker, files):
    folder = files / "gpt2dir"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"n_embd": 8, "n_head": 2, "n_layer": 1}))
    os.mkfifo(folder / "model.safetensors")
    _refused(worker.run(["run", "index-idxl", "--model", f"hf-gpt2:{folder}", "--n", "4", "--json"]),
             "model.safetensors", "pipe")


# ---- 29.7: sizes from headers and configs, before anything is allocated -----------------------------------
@pytest.mark.parametrize("spec", ["elman:weights=bigelman.npz", "attention:weights=bigatt.npz"])
def test_an_npz_header_claiming_more_than_the_file_holds_is_refused_before_loading(worker, spec):
    _refused(worker.run(["run", "index-idxl", "--model", spec, "--n", "4", "--json"]),
             "(100000, 100000)", "74.5 GiB", "holds 8 bytes")


def test_a_gpt2_config_too_large_for_memory_is_refused_from_the_config(worker):
    _refused(worker.run(["run", "index-idxl", "--model", "hf-gpt2:config=big.json", "--n", "4", "--json"]),
             "config=big.json", "dim 65536", "would need about")


def test_a_gpt2_directory_too_large_for_memory_is_refused_from_its_config(worker, files):
    folder = files / "widedir"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"n_embd": 65536, "n_head": 8, "n_layer": 1}))
    (folder / "model.safetensors").write_bytes(b"not read")
    _refused(worker.run(["run", "index-idxl", "--model", f"hf-gpt2:{folder}", "--n", "4", "--json"]),
             "config.json", "dim 65536", "would need about")


def test_budget_with_a_billion_heads_is_refused(worker):
    _refused(worker.run(["budget", "--arch", "attention", "--heads", "1000000000", "--width", "8", "--precision",
                         "8", "--task", "dyck22-fooling", "--json"]), "--heads", "8192")


# ---- 24.6: gamma too small for Lemma 2's width, refused at once -------------------------------------------
@pytest.mark.parametrize("gamma", ["1e-300", "1e-30", "0.01"])
def test_a_construction_gamma_too_small_is_refused_at_once(worker, gamma):
    line = _refused(worker.run(["run", "index-idxl", "--model", f"construct:idxl:gamma={gamma}", "--n", "8",
                                "--json"]), "gamma", "8 ln(2N)/gamma^2")
    assert "at least 0.053" in line


def test_the_smallest_gamma_allowed_builds_a_verified_set():
    from protocols.constructions.orthogonal import MAX_K, theorem_k
    assert theorem_k(4096, 0.1) <= MAX_K           # separate --gamma 0.1 stays buildable at the longest N
    with pytest.raises(ValueError, match="gamma"):
        theorem_k(8, 0.052)


# ---- 29.8: exit 2, not 1 ------------------------------------------------------------------------------
def test_a_python_factory_in_a_file_without_py_is_refused(worker):
    _refused(worker.run(["run", "index-idxl", "--model", "python:factory.txt:f", "--n", "4", "--json"]),
             "not a .py file")


def test_a_gpt2_config_whose_width_is_not_a_multiple_of_its_heads_is_refused(worker):
    _refused(worker.run(["run", "index-idxl", "--model", "hf-gpt2:config=odd.json", "--n", "4", "--json"]),
             "config=odd.json", "not a multiple")


@pytest.mark.parametrize("body, needle", [
    ("def register(registry):\n    raise ValueError('broken plugin')\n", "raised ValueError: broken plugin"),
    ("def register():\n    pass\n", "cannot be called as register(registry)"),
    ("def register(registry, extra):\n    pass\n", "cannot be called as register(registry)"),
    ("raise RuntimeError('at import')\n", "raised RuntimeError: at import"),
    ("import sys\nsys.exit(4)\n", "called sys.exit(4)"),
    ("import sys\ndef register(registry):\n    sys.exit(0)\n", "called sys.exit(0)"),
])
def test_a_plugin_whose_code_fails_is_bad_input_and_registers_nothing(capsys, tmp_path, monkeypatch, body, needle):
    name = f"broken_plugin_{abs(hash(body))}"
    (tmp_path / f"{name}.py").write_text("def _model(spec, **context):\n    return None\n\n"
                                         + body.replace("def register(registry):\n",
                                                        "def register(registry):\n    registry.register('model', "
                                                        f"'{name}', _model)\n"))
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, err = run_main(capsys, "run", "index-idxl", "--n", "4", "--plugin", name, "--json")
    assert code == 2 and err.count("\n") == 1, (code, err)
    line = json.loads(out)["error"]
    assert line.startswith("--plugin") and needle in line, line
    from commsim.plugins import registry
    assert name not in registry.names("model")         # nothing half-registered
    sys.modules.pop(name, None)


# ---- 29.9: sys.exit in user code is an error, not the process's end ---------------------------------------
@pytest.mark.parametrize("spec, code_shown", [("python:exits.py:zero", "sys.exit(0)"),
                                              ("python:exits.py:five", "sys.exit(5)"),
                                              ("python:exits_on_import.py:f", "sys.exit(7)")])
def test_a_factory_calling_sys_exit_is_one_error_object(worker, spec, code_shown):
    _refused(worker.run(["run", "index-idxl", "--model", spec, "--n", "4", "--json"]), code_shown)


def test_a_model_whose_forward_calls_sys_exit_is_one_error_object(capsys, tmp_path, monkeypatch):
    """SystemExit from a model's own code, called by commsim during the run, is exit 2 naming where."""
    (tmp_path / "exiting_model.py").write_text(
        "import sys\nfrom protocols.models.trainable import random_model\n\n"
        "def make():\n    model = random_model('elman', 4, '8', vocab=6)\n"
        "    class Exiting(type(model)):\n        def forward(self, *args, **kwargs):\n            sys.exit(6)\n"
        "        run = step = forward_batch = forward\n"
        "    model.__class__ = Exiting\n    return model\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", "python:exiting_model.py:make", "--n", "4",
                              "--json")
    assert code == 2 and err.count("\n") == 1, (code, out, err)
    line = json.loads(out)["error"]
    assert "exiting_model.py" in line and "sys.exit(6)" in line, line


def test_commsims_own_exit_status_passes_through(capsys):
    """run --fail-on-certificate exits 3 from commsim's own code: that SystemExit is not user code's."""
    code, out, _ = run_main(capsys, "run", "index-idxl", "--model", "memorize:capacity=2", "--n", "6",
                              "--fail-on-certificate", "--json")
    assert code == 3 and json.loads(out)["certificate"] is not None


# ---- 29.10: a spec that contradicts its weights file ------------------------------------------------------
@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_a_kind_that_contradicts_the_weights_file_is_refused(capsys, files, kind):
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", f"{kind}:weights={files / 'elman.npz'}",
                              "--n", "4", "--json")
    assert code == 2, (code, err)
    line = json.loads(out)["error"]
    assert "weights=" in line and f"elman weights, not {kind}" in line, line
