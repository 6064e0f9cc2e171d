"""``commsim replicate``: the quick scale of bhbk24-index runs end to end (table, figure, page, JSON) and checks
its own invariants -- no quantised recurrent model above the Fano ceiling, every certificate verified, the
protocol equal to the quantised model --; a second identical command runs nothing (resumable); bad input exits
2 naming the argument; a file that is not a replicate table is refused and left alone."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from cli_helpers import run_main

from commsim.batch.replicate import cell_key, read_rows
from protocols.experiments.bhbk24 import EXPERIMENTS
from protocols.experiments.bounds import sampling_margin

INDEX = next(e for e in EXPERIMENTS if e.name == "bhbk24-index")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One quick run of bhbk24-index with every output; (folder, parsed --json)."""
    folder = tmp_path_factory.mktemp("replicate")
    from click.testing import CliRunner

    from commsim.cli import cli
    args = ["replicate", "bhbk24-index", "--scale", "quick", "--out", str(folder / "r.csv"), "--plot",
            str(folder / "r.png"), "--html", str(folder / "r.html"), "--json"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return folder, json.loads(result.stdout)


def test_quick_scale_runs_every_cell_and_checks_its_invariants(quick):
    folder, report = quick
    rows = report["rows"]
    assert report["cells"] == len(INDEX.cells("quick")) == len(rows) and report["failed"] == 0
    assert report["violations"] == []
    recurrent = [r for r in rows if r["recurrent"]]
    assert {r["model"] for r in recurrent} == {"lstm", "dss", "linattn"}
    for r in recurrent:
        assert r["p_eff"] is not None and r["state_bits"] == r["state_numbers"] * r["p_eff"]
        # the quantised model is a one-way protocol with S bits: never above the Fano ceiling (sampling aside)
        assert r["quantised_accuracy"] <= r["fano_ceiling"] + sampling_margin(r["bound_eval"])
        assert r["ceiling_check_strings"] == r["ceiling_eval"] and r["sampling_margin"] == round(
            sampling_margin(r["ceiling_eval"]), 4)
        assert r["ceiling_check_accuracy"] <= r["fano_ceiling"] + sampling_margin(r["ceiling_check_strings"])
        assert r["run_bits_used"] == r["state_bits"]            # the handoff sends exactly the quantised state
        assert r["run_protocol_matches_model"] is True
        assert r["run_certificate"] is None or r["run_certificate_verified"] is True
    assert all(0 <= r["accuracy"] <= 1 for r in rows)
    # quick judges no claim: every verdict is "smoke test", with the test it would take at a real scale
    assert report["claims"] and {c["status"] for c in report["claims"]} == {"smoke test"}
    assert all(c["test"].startswith("not judged at the quick scale") and "Wilson" in c["interval"]
               for c in report["claims"])


def test_outputs_and_provenance(quick):
    folder, report = quick
    table = read_rows(folder / "r.csv")
    assert len(table) == report["cells"]
    for row in table:
        cell = {k: row[k] for k in ("model", "layers", "width", "N", "seed", "scale", "k", "steps", "batch", "eval",
                                    "bound_eval", "ceiling_eval", "run_instances")}
        assert row["cell"] == cell_key("bhbk24-index", cell)
        assert row["commsim_version"] and row["torch_version"] and row["seconds"] >= 0
    assert (folder / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (folder / "r.html").read_text(encoding="utf-8")
    assert "<svg" in page and "Fano" in page and "<script" not in page
    for claim in report["claims"]:
        assert claim["status"] in page


def test_a_second_identical_command_runs_nothing(quick, capsys):
    folder, _ = quick
    before = (folder / "r.csv").read_bytes()
    code, out, _ = run_main(capsys, "replicate", "bhbk24-index", "--out", str(folder / "r.csv"), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["run"] == 0 and report["skipped"] == report["cells"]
    assert (folder / "r.csv").read_bytes() == before


def test_a_second_command_says_nothing_was_written_and_counts_repeated_rows(quick, capsys, tmp_path):
    folder, _ = quick
    code, out, _ = run_main(capsys, "replicate", "bhbk24-index", "--out", str(folder / "r.csv"))
    assert code == 0 and "nothing to write to" in out and "table written" not in out
    repeated = tmp_path / "r.csv"                         # the same table with its first row twice more
    lines = (folder / "r.csv").read_text().splitlines(keepends=True)
    repeated.write_text("".join(lines[:2] + lines[1:2] * 2 + lines[2:]))
    code, out, err = run_main(capsys, "replicate", "bhbk24-index", "--out", str(repeated), "--json")
    report = json.loads(out)
    assert code == 0 and report["run"] == 0 and report["duplicates"] == 2 and report["written"] is True
    assert "2 rows repeat a cell key" in err and len(read_rows(repeated)) == len(lines) - 1
    assert len(repeated.read_text().splitlines()) == len(lines)          # written without the repeats


def test_the_check_catches_a_point_above_the_ceiling(quick):
    _, report = quick
    row = dict(next(r for r in report["rows"] if r["recurrent"]))
    row.update(fano_ceiling=0.3, ceiling_check_accuracy=0.99, run_certificate="collision",
               run_certificate_verified=False, run_protocol_matches_model=False)
    problems = INDEX.check([row])
    assert len(problems) == 3 and "above the Fano ceiling" in problems[0]


@pytest.mark.parametrize("args,flag", [
    (["replicate", "no-such-experiment"], "experiment"),
    (["replicate", "bhbk24-index", "--scale", "huge"], "--scale"),
    (["replicate", "bhbk24-index", "--out", "r.txt"], "--out"),
    (["replicate", "bhbk24-index", "--plot", "r.pdf"], "--plot"),
    (["replicate", "bhbk24-index", "--html", "r.txt"], "--html"),
    (["replicate", "bhbk24-index", "--executor", "processes", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
])
def test_bad_input_exits_2_naming_the_argument(args, flag, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(capsys, *args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and ("experiment" if flag == "experiment" else flag) in err


def test_a_file_that_is_not_a_replicate_table_is_refused(tmp_path, capsys):
    other = tmp_path / "mine.csv"
    pd.DataFrame({"a": [1, 2]}).to_csv(other, index=False)
    before = other.read_bytes()
    code, _, err = run_main(capsys, "replicate", "bhbk24-index", "--out", str(other))
    assert code == 2 and "not a commsim replicate table" in err
    assert other.read_bytes() == before


def test_the_api_reads_the_same_table(quick):
    import commsim
    folder, report = quick
    frame = commsim.replicate("bhbk24-index", "quick", out=str(folder / "r.csv"))
    assert frame.attrs["run"] == 0 and frame.attrs["skipped"] == len(frame) == report["cells"]
    assert frame.attrs["violations"] == [] and frame.attrs["claims"] == report["claims"]
    with pytest.raises(commsim.InputError) as caught:
        commsim.replicate("bhbk24-index", "huge")
    assert caught.value.param == "scale"
