"""Text from the user (an argument, a file name, a plugin's description) reaches the terminal as it is: rich's
emoji codes are off (``:100:`` is not an emoji) and markup in it (``[bold]``) is escaped; long descriptions
are wrapped, never cut short."""
from __future__ import annotations

import io
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.markup import escape
from rich.table import Table

from commsim.cli import common
from commsim.cli.listing import wrap_description
from tests.cli.cli_helpers import invoke, run_main

USER_TEXT = "a[bold]b[/bold]:100::smile:c"


def test_an_error_line_carries_the_user_s_value_verbatim(capsys):
    code, _, err = run_main(capsys, "budget", "--arch", "rnn", "--width", "4", "--precision", "4",
                            "--reduction", "index-idxl", "--n-range", "2:100:0")
    assert code == 2 and "got '2:100:0'" in err and "A:B:STEP" in err, err
    code, _, err = run_main(capsys, "tree", "eq", "--n", "2", "--protocol", USER_TEXT)
    assert code == 2 and repr(USER_TEXT) in err, err


def test_a_file_name_in_a_table_is_shown_verbatim(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(common.console, "_width", 200)
    name = f"{USER_TEXT.replace('/', '')}.dot"
    code, out, err = run_main(capsys, "tree", "eq", "--n", "2", "--protocol", "one-way", "--dot", name)
    assert code == 0, err
    assert (tmp_path / name).exists()
    assert f"│ {name} " in out, out


def test_written_file_names_are_shown_verbatim(tmp_path, capsys, monkeypatch):
    """The "... written to NAME" line of every command that writes a named file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(common.console, "_width", 300)
    stem = USER_TEXT.replace("/", "")
    runs = [(["budget", "--arch", "rnn", "--width", "4", "--precision", "8", "--reduction", "index-idxl",
              "--plot", f"{stem}.svg", "--html", f"{stem}-b.html"], [f"{stem}.svg", f"{stem}-b.html"]),
            (["run", "index-idxl", "--n", "4", "--html", f"{stem}-r.html"], [f"{stem}-r.html"]),
            (["teach", "rnn-index", "--out", f"{stem}.txt"], [f"{stem}.txt"]),
            (["teach", "rnn-index", "--format", "html", "--out", f"{stem}.html"], [f"{stem}.html"]),
            (["teach", "rnn-index", "--format", "markdown", "--out", f"{stem}.md"], [f"{stem}.md"])]
    for args, names in runs:
        code, out, err = run_main(capsys, *args)
        assert code == 0, (args, err)
        for name in names:
            assert (tmp_path / name).exists()
            assert f"written to {name}" in out, (args, out[-400:])


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="ab:[]/ 01=", min_size=1, max_size=30).filter(lambda t: t.strip() == t and t))
@example("2:100:0")
@example(USER_TEXT)
def test_the_consoles_print_user_text_as_it_is(text):
    """Both of the CLI's consoles, as the commands use them: an error line (markup off) and an escaped table
    cell."""
    for make in (lambda f: common._Console(file=f, width=200), lambda f: common._Console(file=f, width=200,
                                                                                         stderr=True)):
        buffer = io.StringIO()
        console = make(buffer)
        console.print(f"Error: {text}", markup=False, soft_wrap=True)
        table = Table(show_header=False)
        table.add_column()
        table.add_row(escape(text))
        console.print(table)
        lines = buffer.getvalue().splitlines()
        assert lines[0] == f"Error: {text}"
        assert any(line.strip("│ ").rstrip() == text.rstrip() for line in lines[1:]), lines


# ---- commsim list wraps, never truncates ---------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab,= |", max_size=120), st.integers(1, 40))
def test_wrap_description_keeps_every_character_and_fits_the_width(text, width):
    lines = wrap_description(text, width)
    assert "".join(lines).replace(" ", "") == re.sub(r"\s", "", text)
    for line in lines:
        pieces = re.findall(r"[^\s,]*,|[^\s,]+", line)
        assert len(line) <= width or len(pieces) == 1, (line, width)      # only a single piece overflows


def test_list_at_100_columns_shows_the_whole_attention_description(monkeypatch):
    monkeypatch.setattr(common.console, "_width", 100)
    out = invoke("list")
    assert "…" not in out
    flat = "".join(line.split("│")[2].strip() if line.count("│") >= 3 else "" for line in out.splitlines())
    for key in ("division=once|per-weight", "residual=0|1", "weights=FILE.npz"):
        assert key in flat, flat
    assert max(len(line) for line in out.splitlines()) <= 100
