"""Issue 13 (hardening): malformed specs, corrupt weights files, interrupts, closed pipes, non-UTF-8
output, and the small cases.  Bad input is exit 2 with one line naming what is wrong; Ctrl-C is exit 130
with one line; a closed stdout pipe is a normal end (exit 0, nothing on stderr)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_main
from interrupts import (
    LOADS,
    ctrl_c,
    gone,
    ignores_sigint,
    needs_proc,
    spawned_children,
    start_commsim,
    under,
    wait_for,
)

from commsim.core.errors import InputError
from commsim.core.precision import parse_format
from commsim.spec import ModelSpec
from protocols.models.attention import random_layer
from protocols.models.trainable import random_model

ROOT = Path(__file__).resolve().parents[2]


def _one_error_line(code: int, out: str, err: str) -> None:
    assert code == 2 and out == "" and err.startswith("Error: ") and err.count("\n") == 1, (code, out, err)
    assert "Traceback" not in err and "internal error" not in err


def _commsim(*args, env=None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """The console command in a fresh interpreter (what a shell runs)."""
    return subprocess.run([sys.executable, "-m", "commsim", *args], cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE,
                          timeout=120, env={**os.environ, **(env or {})})


# ---- 1. a spec segment that is not key=value is an error naming it ------------------------------------
@pytest.mark.parametrize("spec,segment", [
    ("elman:widht8", "widht8"), ("lstm:width:precision=4", "width"), ("gru:nonsense", "nonsense"),
    ("memorize:foo", "foo"), ("construct:idxl:bar", "bar"), ("elman:", "empty segment"),
    ("elman::width=4", "empty segment")])
def test_a_segment_that_is_not_key_value_is_refused(capsys, spec, segment):
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", spec, "--n", "4")
    _one_error_line(code, out, err)
    assert err.startswith("Error: --model:") and segment in err


@pytest.mark.parametrize("spec", ["elman:width=4", "construct:idxl", "memorize:capacity=3"])
def test_specs_without_stray_segments_still_run(capsys, spec):
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", spec, "--n", "4", "--instances", "8", "--json")
    assert code == 0 and json.loads(out)["model"] == spec, err


def test_a_target_is_accepted_exactly_when_the_factory_reads_it():
    """python:MODULE:FUNCTION[:k=v], torch:FILE, hf-gpt2:DIR keep their non key=value segments."""
    spec = ModelSpec.parse("python:pkg.mod:make:hidden=8", ["python", "elman"])
    assert (spec.kind, spec.target, spec.params) == ("python", "pkg.mod:make", {"hidden": "8"})
    spec.int("hidden")
    spec.finish()                                       # the factory read the target and the key
    unread = ModelSpec.parse("elman:widht8", ["python", "elman"])
    with pytest.raises(InputError, match="segment 'widht8' is not key=value"):
        unread.finish()


# ---- 2. corrupt weights files: exit 2 naming the file and what is wrong -----------------------------
def _corrupt_files(tmp_path: Path) -> list[tuple[str, Path, str]]:
    """(model kind, file, words the error must contain) for each way a weights file can be broken."""
    elman, att = tmp_path / "good_elman.npz", tmp_path / "good_att.npz"
    random_model("elman", 4, "8", 2, 2).save(str(elman))
    random_layer(parse_format("16"), vocab=3, positions=None).save(att)
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(elman.read_bytes()[:200])
    cases = [("elman", empty, "empty"), ("attention", empty, "empty"),
             ("elman", truncated, "truncated"), ("attention", truncated, "truncated"),
             ("elman", tmp_path, "directory")]

    def variant(src, name, **changes):
        arrays = dict(np.load(src))
        arrays.update(changes)
        path = tmp_path / name
        np.savez(path, **arrays)
        return path
    cases += [("elman", variant(elman, "zero_d.npz", input=np.array(1.0)), "dimension"),
              ("elman", variant(elman, "one_d.npz", recurrent=np.zeros(4)), "dimension"),
              ("elman", variant(elman, "text.npz", input=np.full((2, 4), "a")), "not numbers"),
              ("attention", variant(att, "att_text.npz", W_Q=np.array("x")), "not numbers"),
              ("attention", variant(att, "att_1d.npz", W_K=np.zeros(3)), "dimension"),
              ("attention", variant(att, "att_psi.npz", psi_layers=np.array(3)), "psi_W1"),
              # an object array (pickled): refused by name, not "truncated or not an .npz file"
              ("elman", variant(elman, "obj.npz", input=np.array([{"a": 1}, None], dtype=object)),
               "array 'input.npy' holds pickled Python objects (dtype object), which commsim refuses to load"),
              ("attention", variant(att, "att_obj.npz", W_Q=np.array([None], dtype=object)),
               "holds pickled Python objects")]
    return cases


def test_corrupt_weights_files_are_bad_input_naming_the_file(capsys, tmp_path):
    for kind, path, words in _corrupt_files(tmp_path):
        code, out, err = run_main(capsys, "run", "index-idxl", "--model", f"{kind}:weights={path}", "--n", "4")
        _one_error_line(code, out, err)
        assert str(path) in err and words in err, (kind, path.name, err)


# ---- 4. interrupts -----------------------------------------------------------------------------------
AUDIT = ["cc", "index", "--n", "14", "--protocol", "one-way", "--instances", "30000", "--audit"]


@needs_proc
@pytest.mark.parametrize("load", LOADS)
@pytest.mark.parametrize("moment", ["workers-starting", "workers-serving"])
def test_ctrl_c_during_audit_exits_130_with_one_line_and_quiet_workers(load, moment):
    """Ctrl-C to the whole process group (what a terminal does), the workers included: while the two audit
    workers are still starting up (before they can have set SIGINT aside), or once both are serving.  The
    parent owns the interrupt -- exit 130, exactly one line -- and the workers end without a word."""
    with under(load):
        proc = start_commsim(AUDIT)

        def workers_at_the_moment():
            workers = spawned_children(proc.pid)
            return len(workers) == 2 and (moment == "workers-starting" or all(map(ignores_sigint, workers)))
        wait_for(workers_at_the_moment, f"two audit workers ({moment})", proc)
        workers = spawned_children(proc.pid)
        out, err = ctrl_c(proc)
    assert (proc.returncode, err) == (130, "Error: interrupted\n"), (proc.returncode, err)
    assert "checked by the runner" not in out                    # the report of a finished run never came
    wait_for(lambda: all(map(gone, workers)), "the end of the audit workers", bound=30)


def test_a_closed_stdout_pipe_is_a_normal_end():
    read_end, write_end = os.pipe()
    os.close(read_end)                       # the reader (``head -1``) is already gone
    try:
        result = _commsim("list", stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == 0 and result.stderr == b""


# ---- 5. non-UTF-8 output, plugins, teach, torch:DIR, --gamma ------------------------------------------
def test_output_to_an_ascii_terminal_falls_back_instead_of_failing():
    result = _commsim("automaton", "dyck22", "--n", "4", env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("ascii")     # every byte is ASCII: boxes drawn with + - |
    assert "dyck22" in text and "+--" in text


@pytest.mark.parametrize("plugin", ["", "../etc", "a/b", "x..y"])
def test_a_plugin_that_is_not_a_module_name_is_bad_input(capsys, plugin):
    code, out, err = run_main(capsys, "list", "--plugin", plugin)
    _one_error_line(code, out, err)
    assert "--plugin" in err and "module name" in err


def test_teach_json_without_a_topic_prints_one_object(capsys):
    code, out, err = run_main(capsys, "teach", "--json")
    assert code == 2 and json.loads(out)["error"].startswith("give a TOPIC") and err.count("\n") == 1


def test_teach_json_with_out_writes_the_file_and_says_where(capsys, tmp_path):
    target = tmp_path / "lesson.json"
    code, out, err = run_main(capsys, "teach", "rnn-index", "--json", "--out", str(target))
    assert code == 0, err
    said = json.loads(out)
    assert said["written_to"] == str(target) and said["topic"] == "rnn-index"
    assert json.loads(target.read_text(encoding="utf-8"))["topic"] == "rnn-index"


def test_torch_spec_naming_a_directory_says_so(capsys, tmp_path):
    pytest.importorskip("torch")
    code, out, err = run_main(capsys, "run", "index-idxl", "--model", f"torch:{tmp_path}", "--n", "4")
    _one_error_line(code, out, err)
    assert "is a directory" in err and "does not exist" not in err


@pytest.mark.parametrize("gamma", ["1e-300", "0", "0.01", "1"])
def test_gamma_outside_its_range_is_bad_input_with_the_range(capsys, gamma):
    code, out, err = run_main(capsys, "separate", "idxl", "--n", "4", "--gamma", gamma)
    _one_error_line(code, out, err)
    assert "[0.1, 1)" in err


# ---- 6. documentation: code-running specs are marked as such ------------------------------------------
def test_help_and_readme_say_that_python_specs_and_plugins_run_code(capsys):
    code, out, _ = run_main(capsys, "run", "--help")
    text = " ".join(out.split())
    assert code == 0 and "python: spec imports and runs code" in text and "runs a shell command" in text
    assert "imports and runs MODULE's code" in text            # the --plugin option of run
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "**Safety**" in readme and "python:os:system:command=" in readme
