"""commsim.sweep: ranges and spec patterns expand as written, cells are keyed by what they run, every
executor gives the same table, and an interrupted sweep resumes without re-running finished cells."""
from __future__ import annotations

import math
import os

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import commsim
from commsim.core.errors import InputError
from commsim.core.executors import make_executor
from commsim.batch.grid import MAX_CELLS, build_grid, expand_model, parse_item, parse_values, range_count
from commsim.runs.run import run_reduction
from commsim.batch.sweep import read_table, run_cell, sweep

distributed = pytest.importorskip("distributed")

#: a small grid that still varies everything: two reductions, model widths and precisions, n, seeds, a
#: model below the bound (a collision certificate) and one the reduction refuses (an error row)
SMALL = dict(reductions=["index-idxl", "eq-ineq"], models=["elman:width=1..2,precision=2|4", "dfa:dyck22"],
             n="3..4", seeds="0", instances=None)


def _grid_frame(**options):
    return sweep(SMALL["reductions"], SMALL["models"], SMALL["n"], seeds=SMALL["seeds"], **options)


@pytest.fixture(scope="module")
def cluster():
    """One Dask LocalCluster (2 worker processes, no dashboard) for the whole module."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as c:
        yield c


@pytest.fixture(scope="module")
def reference():
    """The small grid run in this process: the table every executor must reproduce."""
    return _grid_frame()


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    made = ["seconds", "written_at"]                       # when each row was made
    pd.testing.assert_frame_equal(a.drop(columns=made).reset_index(drop=True),
                                  b.drop(columns=made).reset_index(drop=True))


# ---- ranges and patterns ------------------------------------------------------------------------
@pytest.mark.parametrize("text, values", [
    ("8..16:x2", [8, 16]), ("4..8:+4", [4, 8]), ("1..3", [1, 2, 3]), ("2..9:x2", [2, 4, 8]), ("7", [7]),
    ("3..10:+3", [3, 6, 9]), ("-2..2:+2", [-2, 0, 2]), ("tanh", ["tanh"]), ("../w.npz", ["../w.npz"]),
])
def test_a_range_item_expands_to_its_values(text, values):
    assert parse_item(text, "x") == values


@pytest.mark.parametrize("text", ["8..4", "1..8:+0", "0..8:x2", "1..8:x1", "1..10000000", "1..2..3"])
def test_a_bad_range_is_refused_naming_the_parameter(text):
    with pytest.raises(InputError) as err:
        parse_item(text, "--n")
    assert err.value.param == "--n" and text.split(":")[0].strip() in str(err.value)


@settings(max_examples=200, deadline=None)
@given(st.integers(-50, 200), st.integers(0, 300), st.sampled_from("+x"), st.integers(1, 5))
def test_ranges_are_the_arithmetic_and_geometric_sequences(start, span, op, step):
    stop = start + span
    if op == "x":
        start, step = max(start, 1), step + 1
        stop = max(stop, start)
    values = parse_item(f"{start}..{stop}:{op}{step}", "n")
    expected, v = [], start
    while v <= stop:
        expected.append(v)
        v = v + step if op == "+" else v * step
    assert values == expected and range_count(start, stop, op, step) == len(expected)


def test_lists_mix_values_and_ranges_without_repeats():
    assert parse_values("8,12..16:+4,8", "n") == [8, 12, 16]
    assert parse_values([4, "8..16:x2"], "n") == [4, 8, 16]
    with pytest.raises(InputError):
        parse_values(",", "n")


def test_a_pattern_expands_its_ranges_alternatives_and_added_format():
    specs = [c.spec for c in expand_model("elman:width=2..8:x2,precision=4..8:+4")]
    assert specs == [f"elman:width={w},precision={p}" for w in (2, 4, 8) for p in (4, 8)]
    choice = expand_model("lstm:width=3,activation=tanh|relu", dtype=["float16", "float32"])
    assert [c.spec for c in choice] == [f"lstm:width=3,activation={a},dtype={d}" for a in ("tanh", "relu")
                                        for d in ("float16", "float32")]
    assert dict(choice[-1].varied) == {"activation": "relu", "dtype": "float32"}   # width=3 does not vary
    assert [c.spec for c in expand_model("python:examples.factories:lstm_index:hidden=8..16:x2")] == \
        ["python:examples.factories:lstm_index:hidden=8", "python:examples.factories:lstm_index:hidden=16"]
    with pytest.raises(InputError, match="number format already"):
        expand_model("elman:precision=4", precision=[8])


def test_a_file_glob_gives_one_spec_per_file_sorted(tmp_path):
    for name in ("b.pt", "a.pt", "c.txt"):
        (tmp_path / name).write_bytes(name.encode())
    choices = expand_model(f"torch:{tmp_path}/*.pt:precision=4..8:+4")
    assert [c.spec for c in choices] == [f"torch:{tmp_path}/{f}:precision={p}" for f in ("a.pt", "b.pt") for p in (4, 8)]
    assert dict(choices[0].varied)["file"] == f"{tmp_path}/a.pt"
    with pytest.raises(InputError, match="no file matches"):
        expand_model(f"torch:{tmp_path}/*.npz")


def test_the_grid_is_the_product_and_its_size_is_checked_before_it_is_built():
    cells = build_grid(["index-idxl", "eq-ineq"], "elman:width=2..8:x2", "4..8:x2", "0..2")
    assert len(cells) == 2 * 3 * 2 * 3
    assert len({c.key() for c in cells}) == len(cells)
    with pytest.raises(InputError, match="number of cells"):
        build_grid("index-idxl", "elman:width=1..100,precision=1..60", "1..2")       # 12,000 cells
    with pytest.raises(InputError, match=str(MAX_CELLS)):
        build_grid("index-idxl", "elman:width=1..2000000000", "8")                   # refused from its ends


def test_a_cell_key_is_what_it_runs_including_the_files_it_reads(tmp_path):
    weights = tmp_path / "w.pt"
    weights.write_bytes(b"one")
    key = build_grid("index-idxl", f"torch:{weights}", 8)[0].key()
    assert build_grid("index-idxl", f"torch:{weights}", 8)[0].key() == key          # stable
    for other in (build_grid("index-idxl", f"torch:{weights}", 8, 1), build_grid("index-idxl", f"torch:{weights}", 9),
                  build_grid("index-idxl", f"torch:{weights}", 8, instances=5)):
        assert other[0].key() != key
    weights.write_bytes(b"two")                                                       # a retrained checkpoint
    assert build_grid("index-idxl", f"torch:{weights}", 8)[0].key() != key


# ---- one cell -----------------------------------------------------------------------------------
def test_a_row_holds_the_reports_figures():
    cell = build_grid("index-idxl", "memorize:capacity=7", 8)[0]
    row = run_cell(cell)
    report = run_reduction("index-idxl", "memorize:capacity=7", 8)
    assert {k: v for k, v in row.items() if k in report.to_row()} == report.to_row()   # the API's flat row
    assert row["bits_used"] == 7 and row["lower_bound_bits"] == 8 and row["budget_ok"] is False
    assert row["certificate_kind"] == "collision" and row["certificate"] is True
    assert row["runner_checked"] == report.runner_checked and row["protocol_matches_model"] is True
    assert row["error"] is None and row["cell"] == cell.key() and row["seconds"] > 0


def test_a_cell_the_reduction_refuses_is_a_row_with_the_reason():
    row = run_cell(build_grid("dyck22-fooling", "elman:width=2,precision=4", 4)[0])
    assert "does not apply to a recurrent model" in row["error"] and row.get("bits_used") is None


# ---- executors ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["inprocess", "processes", "dask-threads"])
def test_an_executor_maps_in_order_and_passes_exceptions_on(kind):
    executor = make_executor("dask", workers=2, processes=False) if kind == "dask-threads" else \
        make_executor(kind, workers=None if kind == "inprocess" else 2)
    with executor as ex:
        assert ex.map(math.factorial, [5, 0, 7, 3, 10, 1]) == [120, 1, 5040, 6, 3628800, 1]
        assert sorted(ex.as_completed(abs, [-3, 2])) == [(0, 3), (1, 2)]
        with pytest.raises(ValueError):
            ex.map(math.factorial, [3, -1])


def test_bad_executor_arguments_are_refused():
    for kwargs, param in ((dict(kind="gpu"), "executor"), (dict(kind="processes", scheduler="tcp://x:1"), "scheduler"),
                          (dict(kind="inprocess", workers=2), "workers"), (dict(kind="processes", workers=0), "workers")):
        with pytest.raises(InputError) as err:
            make_executor(**kwargs)
        assert err.value.param == param


def test_processes_give_the_same_table_as_in_process(reference):
    frame = _grid_frame(executor="processes", workers=2)
    _same(frame, reference)
    assert frame.attrs["executor"] == "processes (2 workers)"


def test_a_dask_cluster_gives_the_same_table_as_in_process(reference, cluster):
    frame = _grid_frame(executor="dask", scheduler=cluster.scheduler_address)
    _same(frame, reference)
    assert frame.attrs["executor"].startswith("dask (2 workers, scheduler tcp://")


def test_an_embedded_one_worker_cluster_gives_the_same_table(reference):
    with make_executor("dask", workers=1, processes=False) as ex:      # threads: no second process cluster
        frame = _grid_frame(executor=ex)
        assert ex.client.status == "running"                           # a given executor is left open
    _same(frame, reference)
    assert frame.attrs["executor"] == "dask (1 worker, embedded LocalCluster)"


def test_the_small_grid_covers_what_it_claims(reference):
    assert reference.attrs["cells"] == len(reference) == 2 * 5 * 2
    ok = reference[reference["error"].isna()]
    assert {"collision", "error"} <= set(ok["certificate_kind"]) and ok["protocol_matches_model"].all()
    assert set(reference["budget_ok"].dropna()) == {True, False}
    assert reference[reference["error"].notna()]["model"].eq("dfa:dyck22").all()  # refused on index-idxl
    assert reference["error"].notna().sum() == 2
    assert list(reference.columns[:6]) == ["cell", "reduction", "model", "pattern", "model.width", "model.precision"]


# ---- resuming -----------------------------------------------------------------------------------
class _Stop(KeyboardInterrupt):
    """Ctrl-C after a given number of finished cells."""


def _interrupt_after(count):
    def progress(done, total):
        if done >= count:
            raise _Stop
    return progress


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path, suffix):
    out = tmp_path / f"r{suffix}"
    grid = dict(reductions="index-idxl", models="elman:width=1..2,precision=2..4:+2", n="3..4")
    with pytest.raises(_Stop):
        commsim.sweep(grid["reductions"], grid["models"], grid["n"], out=out, progress=_interrupt_after(3))
    assert len(read_table(out)) == 3                                    # saved on the way out
    frame = commsim.sweep(grid["reductions"], grid["models"], grid["n"], out=out)
    assert (frame.attrs["cells"], frame.attrs["run"], frame.attrs["skipped"]) == (8, 5, 3)
    whole = sweep(grid["reductions"], grid["models"], grid["n"])
    _same(frame, whole)
    stamp, content = os.stat(out).st_mtime_ns, out.read_bytes()
    again = commsim.sweep(grid["reductions"], grid["models"], grid["n"], out=out, executor="processes")
    assert (again.attrs["run"], again.attrs["skipped"], again.attrs["executor"]) == (0, 8, "none")
    assert os.stat(out).st_mtime_ns == stamp and out.read_bytes() == content   # nothing run, nothing written
    table = pd.DataFrame.from_records(read_table(out))
    assert len(table) == 8 and table["bits_used"].tolist() == whole["bits_used"].tolist()


def test_a_wider_grid_runs_only_its_new_cells_and_keeps_other_rows(tmp_path):
    out = tmp_path / "r.parquet"
    commsim.sweep("index-idxl", "elman:width=1..2,precision=2", 4, out=out)
    wider = commsim.sweep("index-idxl", "elman:width=1..3,precision=2", 4, out=out)
    assert (wider.attrs["run"], wider.attrs["skipped"]) == (1, 2)
    other = commsim.sweep("eq-ineq", "elman:width=1,precision=2", 3, out=out)
    assert other.attrs["run"] == 1 and len(other) == 1 and len(read_table(out)) == 4


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_failed_cells_are_listed_and_run_again(tmp_path, suffix):
    out = tmp_path / f"r{suffix}"
    models = ["elman:width=2,precision=4"]
    frame = commsim.sweep(["index-idxl", "dyck22-fooling"], models, 4, out=out)
    assert frame.attrs["failed"] == 1 and frame["error"].notna().sum() == 1
    again = commsim.sweep(["index-idxl", "dyck22-fooling"], models, 4, out=out)
    assert (again.attrs["run"], again.attrs["skipped"]) == (1, 1)
    with pytest.raises(InputError, match="every cell failed"):
        sweep("dyck22-fooling", models, 4)


def test_a_file_that_is_not_a_sweep_table_is_refused(tmp_path):
    other = tmp_path / "x.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="not a commsim sweep table"):
        commsim.sweep("index-idxl", "elman:width=1,precision=2", 3, out=other)
    broken = tmp_path / "x.parquet"
    broken.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="does not read as a parquet table"):
        commsim.sweep("index-idxl", "elman:width=1,precision=2", 3, out=broken)
    with pytest.raises(InputError, match=r"\.parquet, \.csv or \.json"):
        commsim.sweep("index-idxl", "elman:width=1,precision=2", 3, out=tmp_path / "x.xlsx")
    assert other.read_text() == "a,b\n1,2\n" and broken.read_bytes() == b"not parquet"
