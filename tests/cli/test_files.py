"""Every command that writes a file writes it atomically: complete files on success; on failure nothing
half-written, no temporary file left, an existing file untouched; a missing directory is bad input (exit 2)
naming the option."""
from __future__ import annotations

import json
import os
import re

import pytest
from cli_helpers import invoke, run_main

import commsim.cli.files as files
from commsim.cli.files import TEMP_PREFIX, write_text
from commsim.core.errors import InputError

#: (command line without the file, the option, a file name, a check of the complete file's text or bytes)
WRITERS = [
    (["tree", "eq", "--n", "2", "--protocol", "one-way"], "--dot", "t.dot",
     lambda data: data.startswith(b"digraph protocol_tree {") and data.endswith(b"}\n")),
    (["automaton", "dyck22", "--n", "4"], "--dot", "a.dot",
     lambda data: data.startswith(b"digraph") and data.endswith(b"}\n")),
    (["teach", "rnn-eq", "--format", "markdown"], "--out", "notes.md",
     lambda data: data.startswith(b"# ") and b"Theorem" in data),
    (["teach", "rnn-eq"], "--out", "walk.txt", lambda data: b"Theorem" in data and data.endswith(b"\n")),
    (["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", "eq-ineq"], "--plot", "b.svg",
     lambda data: data.lstrip().startswith(b"<?xml") and data.rstrip().endswith(b"</svg>")),
    (["separate", "idxl", "--n", "8"], "--plot", "s.png", lambda data: data.startswith(b"\x89PNG\r\n\x1a\n")),
    (["run", "index-idxl", "--n", "4"], "--html", "r.html",
     lambda data: data.startswith(b"<!DOCTYPE html>") and data.rstrip().endswith(b"</html>")),
    (["matrix", "eq", "--n", "2"], "--html", "m.html",
     lambda data: data.startswith(b"<!DOCTYPE html>") and b"<svg" in data and data.rstrip().endswith(b"</html>")),
    (["teach", "attention-protocol", "--n", "3", "--format", "html"], "--out", "a.html",
     lambda data: data.startswith(b"<!DOCTYPE html>") and b"<math" in data and data.rstrip().endswith(b"</html>")),
]
IDS = [f"{args[0]} {option} {name}" for args, option, name, _ in WRITERS]


def _written_before(path, data: bytes) -> None:
    """``path`` with ``data``, as a file commsim wrote before (marked as the writer marks its files)."""
    path.write_bytes(data)
    os.setxattr(path, files.MARK, files.file_kind(path).encode())


def _leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX)]


@pytest.mark.parametrize("args,option,name,complete", WRITERS, ids=IDS)
def test_each_writing_command_writes_a_complete_file(tmp_path, args, option, name, complete):
    target = tmp_path / name
    invoke(args + [option, str(target)])
    assert complete(target.read_bytes())
    # Markdown notes bring the SVG figures they link (STEM-figK-kind.svg beside them), and nothing else
    linked = re.findall(r"\]\(([^)]+\.svg)\)", target.read_text(encoding="utf-8")) if name.endswith(".md") else []
    assert _leftovers(tmp_path) == [] and sorted(p.name for p in tmp_path.iterdir()) == sorted({name, *linked})


@pytest.mark.parametrize("args,option,name,complete", WRITERS, ids=IDS)
def test_a_missing_directory_is_bad_input_naming_the_option(capsys, tmp_path, args, option, name, complete):
    code, out, err = run_main(capsys, args + [option, str(tmp_path / "missing" / name)])
    assert code == 2 and out == ""
    assert err.startswith(f"Error: {option}") and "does not exist" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,option,name,complete", WRITERS, ids=IDS)
def test_a_failure_while_writing_leaves_the_old_file_and_no_temporary(capsys, tmp_path, monkeypatch, args, option,
                                                                       name, complete):
    target = tmp_path / name
    _written_before(target, b"the previous file")
    real_replace = files.os.replace

    def disk_full(src, dst):                   # the rendered file is complete in the temporary: fail the rename
        assert src != str(target) and (tmp_path / src.rsplit("/", 1)[-1]).exists()
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(files.os, "replace", disk_full)
    code, out, err = run_main(capsys, args + [option, str(target)])
    monkeypatch.setattr(files.os, "replace", real_replace)
    assert code == 2 and option in err and "No space left on device" in err and err.count("\n") == 1
    assert target.read_bytes() == b"the previous file" and _leftovers(tmp_path) == []


def test_text_half_written_when_the_write_fails_is_removed(tmp_path, monkeypatch):
    target = tmp_path / "out.txt"
    real_fdopen = files.os.fdopen

    class HalfWriter:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            raise OSError(5, "Input/output error")
    monkeypatch.setattr(files.os, "fdopen", lambda fd, *a, **k: HalfWriter(real_fdopen(fd, *a, **k)))
    with pytest.raises(InputError, match="--out: cannot write .*Input/output error") as err:   # exit 2, the reason
        write_text(target, "x" * 1000, option="--out")
    assert err.value.param == "--out" and list(tmp_path.iterdir()) == []


def test_a_figure_that_fails_to_render_leaves_nothing(tmp_path, capsys, monkeypatch):
    import matplotlib.figure

    def broken_savefig(self, path, **kw):
        with open(path, "wb") as fh:
            fh.write(b"<?xml half")
        raise RuntimeError("renderer crashed")
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", broken_savefig)
    code, out, err = run_main(capsys, "budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--task", "eq-ineq",
                              "--plot", str(tmp_path / "b.svg"), "--json")
    assert code == 1 and json.loads(out)["exit_code"] == 1 and "renderer crashed" in err
    assert list(tmp_path.iterdir()) == []


def test_the_writer_refuses_a_directory_as_target_and_keeps_the_usual_mode(tmp_path):
    with pytest.raises(InputError, match="is a directory") as err:
        write_text(tmp_path, "x", option="--dot")
    assert err.value.param == "--dot"
    write_text(tmp_path / "f.txt", "héllo\n", option="--out")
    assert (tmp_path / "f.txt").read_text(encoding="utf-8") == "héllo\n"
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 != 0o600           # not mkstemp's private mode


@pytest.mark.parametrize("args,option,name,complete", WRITERS, ids=IDS)
def test_an_empty_file_name_is_bad_input_naming_the_option(capsys, tmp_path, monkeypatch, args, option, name,
                                                           complete):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(capsys, args + [option, ""])
    assert code == 2 and out == "" and err.startswith(f"Error: {option}") and "empty" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def _fifo(path):
    os.mkfifo(path)


def _symlink(path):
    os.symlink(path.parent / "elsewhere.txt", path)


def _directory(path):
    path.mkdir()


def _read_only(path):
    path.write_bytes(b"keep me")
    path.chmod(0o444)


@pytest.mark.parametrize("make,reason", [(_fifo, "named pipe"), (_symlink, "symbolic link"),
                                         (_directory, "directory"), (_read_only, "read-only")],
                         ids=["fifo", "symlink", "directory", "read-only"])
@pytest.mark.parametrize("args,option,name,complete", WRITERS, ids=IDS)
def test_a_target_that_is_not_a_writable_regular_file_is_left_alone(capsys, tmp_path, args, option, name, complete,
                                                                     make, reason):
    """A device (/dev/null), a FIFO, a symlink, a directory or a read-only file is refused, never renamed over."""
    target = tmp_path / name
    make(target)
    before = os.lstat(target)
    code, out, err = run_main(capsys, args + [option, str(target)])
    assert code == 2 and out == "" and err.startswith("Error: ") and option in err and err.count("\n") == 1, err
    assert reason in err or (reason == "directory" and "is a directory" in err)
    after = os.lstat(target)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode) and _leftovers(tmp_path) == []
    assert not (tmp_path / "elsewhere.txt").exists()


def test_the_writer_refuses_a_device_node_without_touching_it():
    before = os.stat("/dev/null")
    with pytest.raises(InputError, match="character device"):
        write_text("/dev/null", "x", option="--dot")
    assert os.stat("/dev/null").st_ino == before.st_ino


# ---- several files that belong together (issue 29, item 3) ----------------------------------------
def test_notes_whose_figure_target_is_a_symlink_leave_the_users_other_figure_alone(capsys, tmp_path, monkeypatch):
    """The issue's case: the user's own notes-fig1-sequence.svg and a symlink at notes-fig2-sequence.svg ->
    exit 2 naming --out, and fig1 is still the user's file (the rollback used to delete it)."""
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "notes-fig1-sequence.svg"
    _written_before(mine, b"my own drawing\n")     # a figure of earlier notes: one commsim may replace
    before = os.lstat(mine)
    (tmp_path / "notes-fig2-sequence.svg").symlink_to(tmp_path / "elsewhere.svg")
    code, out, err = run_main(capsys, "teach", "attention-dyck", "--format", "markdown", "--out", "notes.md")
    assert code == 2 and out == "" and err.startswith("Error: --out") and "symbolic link" in err
    assert err.count("\n") == 1
    assert mine.read_text() == "my own drawing\n" and os.lstat(mine).st_ino == before.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes-fig1-sequence.svg", "notes-fig2-sequence.svg"]
    assert (tmp_path / "notes-fig2-sequence.svg").is_symlink() and not (tmp_path / "elsewhere.svg").exists()


def test_a_rename_failing_part_way_puts_back_what_was_there_and_removes_only_new_files(tmp_path, monkeypatch):
    """Files renamed before the failure: a replaced one gets its old content (and inode) back, a created one
    goes; a file the call never reached is untouched; no temporary is left."""
    old = tmp_path / "b.svg"
    _written_before(old, b"the old b\n")
    inode = os.lstat(old).st_ino
    untouched = tmp_path / "d.md"
    _written_before(untouched, b"the old d\n")
    real_replace = files.os.replace
    calls = []

    def third_fails(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)
    monkeypatch.setattr(files.os, "replace", third_fails)
    targets = [tmp_path / name for name in ("a.svg", "b.svg", "c.svg", "d.md")]
    with pytest.raises(InputError, match="--out: cannot write .*c.svg.*No space left on device") as err:
        files.write_files([(path, f"new {path.name}") for path in targets], option="--out")
    assert err.value.param == "--out"
    assert old.read_text() == "the old b\n" and os.lstat(old).st_ino == inode
    assert untouched.read_text() == "the old d\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.svg", "d.md"]


def test_every_target_is_checked_before_any_is_written(tmp_path):
    targets = [tmp_path / "a.svg", tmp_path / "b.svg"]
    (tmp_path / "b.svg").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        files.write_files([(path, "x") for path in targets], option="--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.svg"]
    files.write_files([(tmp_path / "a.svg", "text"), (tmp_path / "c.bin", b"\x00\x01")], option="--out")
    assert (tmp_path / "a.svg").read_text() == "text" and (tmp_path / "c.bin").read_bytes() == b"\x00\x01"
    assert _leftovers(tmp_path) == []


# ---- a name ending in a separator names a directory (issue 29, item 4) ----------------------------
SEPARATOR_CASES = [(args, option, name) for args, option, name, _ in WRITERS] + [
    (["sweep", "--reduction", "index-idxl", "--model", "elman:width=1,precision=2", "--n", "3"], "--out", "r.csv"),
    (["sweep", "--reduction", "index-idxl", "--model", "elman:width=1,precision=2", "--n", "3"], "--plot", "r.png"),
    (["teach", "rnn-eq"], "--out", "n.html"),
]


@pytest.mark.parametrize("args,option,name", SEPARATOR_CASES, ids=[f"{a[0]} {o} {n}/" for a, o, n in SEPARATOR_CASES])
def test_a_file_name_ending_in_a_separator_is_refused_before_any_work(capsys, tmp_path, args, option, name):
    code, out, err = run_main(capsys, args + [option, str(tmp_path / name) + os.sep])
    assert code == 2 and out == "" and err.startswith(f"Error: {option}") and "separator" in err, err
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []
