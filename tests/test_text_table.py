"""The plain-text tables (the report's, `rllm-sweeps keys`) read the same on a terminal, under pytest and in a
log: no colour codes, no cut at the terminal's width, a cell's text taken literally."""

from __future__ import annotations

from rllm_sweeps.text_table import text_table


def test_a_table_is_plain_aligned_text_whatever_the_terminal(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "20")
    monkeypatch.setenv("TERM", "xterm-256color")
    literal, error = "[bold]x[/bold] :smile:", "ValueError: " + "e" * 80  # 22 and 92 characters
    lines = text_table([["#", "value", "error"], ["0", literal, error], ["10", "ab", ""]], right={0})
    assert lines == [f" #  {'value':22}  error", f" 0  {literal}  {error}", "10  ab"]
    assert not any("\x1b" in line for line in lines)


def test_a_cell_past_its_columns_max_width_ends_in_an_ellipsis():
    lines = text_table([["path", "lr"], ["/very/long/path/to/some/model", "1"]], max_width={0: 10})
    assert lines == ["path        lr", "/very/lon…  1"]
