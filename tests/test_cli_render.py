"""How the ``lsm`` command shows things (``lsm.cli.render``, ``lsm.cli.layout``): full local
times with their offset in tables, UTC ISO 8601 in ``--json``, ``-o json|yaml`` holding the same
records, tables fitted to a terminal (short ids, ``--wide`` for all) and plain lines, one record
each, for a pipe, through the real commands against a real server."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from lsm.cli import app, render
from lsm.cli.console import out
from tests.api.fixtures import engine, url

__all__ = ["engine", "url"]


@pytest.fixture
def india(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is India's (+05:30 all year, no DST): an offset no UTC machine shows by chance."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's stdout is a terminal (without colours), as in a shell: CliRunner's is not."""
    monkeypatch.setattr(out, "_force_terminal", True)
    monkeypatch.setattr(out, "_color_system", None)


def run(url: str, *args: str, columns: int = 200) -> Any:
    result = CliRunner().invoke(app, [*args, "--url", url], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result


def column(output: str, index: int) -> str:
    """The text of one column of a rich table, its folded lines joined (borders dropped)."""
    cells = [
        line.split("│")[index + 1].strip() for line in output.splitlines() if line.count("│") > index + 1
    ]
    return "".join(cells)


def test_tables_show_local_time_with_offset_and_json_shows_utc(url: str, india: None) -> None:
    created = json.loads(run(url, "instance", "create", "note", "--attr", "title=t1", "--json").stdout)
    stamp = datetime.fromisoformat(created["created_at"].replace("Z", "+00:00"))
    assert stamp.utcoffset() == timedelta(0)  # --json: the API's UTC time, as it is

    [event] = json.loads(run(url, "instance", "log", "note", "title=t1", "--json").stdout)
    assert event["created_at"].endswith("Z")
    log = run(url, "instance", "log", "note", "title=t1").stdout
    shown = run(url, "instance", "show", "note", "title=t1").stdout

    ist = timezone(timedelta(hours=5, minutes=30))
    for iso, output in ((created["created_at"], shown), (event["created_at"], log)):
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        expected = moment.astimezone(ist).isoformat(sep=" ", timespec="milliseconds")
        assert expected.endswith("+05:30")
        assert expected in output


def test_a_narrow_terminal_folds_columns_and_cuts_nothing_with_wide(url: str, terminal: None) -> None:
    created = json.loads(
        run(
            url, "instance", "create", "note", "--attr", "title=a-rather-long-title-for-this-note", "--json"
        ).stdout
    )
    listed = run(url, "instance", "list", "note", "--wide", columns=60).stdout
    log = run(url, "instance", "log", "note", created["id"], "--wide", columns=50).stdout

    assert "…" not in listed and "…" not in log
    assert created["id"] in column(listed, 0)
    assert "a-rather-long-title-for-this-note" in column(listed, 4)
    times = column(log, 1)
    assert times.count(":") >= 3 and ("+" in times or "-" in times[10:])  # date, time and offset, whole


@given(
    moment=st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    )
)
def test_a_shown_time_is_the_same_instant_to_the_millisecond(moment: datetime) -> None:
    iso = moment.isoformat().replace("+00:00", "Z")
    shown = render.local_time(iso)
    back = datetime.fromisoformat(shown)
    assert back.tzinfo is not None
    assert abs(back - moment) < timedelta(milliseconds=1)
    assert render.cell(iso) == shown


def test_text_that_is_not_a_time_is_left_alone() -> None:
    for value in ("2026-11-24", "12:00:00", "not a time", "2026-11-24T12:00:00"):  # no offset: not a time
        assert render.cell(value) == value
        assert render.local_time(value) == value
    assert render.cell(None) == "" and render.cell({"a": 1}) == '{"a": 1}'


def test_a_table_to_no_terminal_keeps_ids_and_times_on_one_line(url: str) -> None:
    """Piped or redirected (no terminal, no ``COLUMNS``), a table is laid out wide: an id or a
    time is never folded over lines, whatever the 80 columns rich assumes without a terminal."""
    created = json.loads(run(url, "instance", "create", "note", "--attr", "title=piped", "--json").stdout)
    [event] = json.loads(run(url, "instance", "log", "note", created["id"], "--json").stdout)
    runner = CliRunner()

    listed = runner.invoke(app, ["instance", "list", "note", "--url", url], env={"COLUMNS": None})
    log = runner.invoke(app, ["instance", "log", "note", created["id"], "--url", url], env={"COLUMNS": None})

    assert listed.exit_code == 0 and log.exit_code == 0, listed.output + log.output
    assert any(created["id"] in line for line in listed.stdout.splitlines())
    assert any(render.local_time(event["created_at"]) in line for line in log.stdout.splitlines())


def _notes(url: str, count: int) -> list[dict[str, Any]]:
    return [
        json.loads(
            run(
                url, "instance", "create", "note", "--attr", f"title=note-{n}-with-a-longish-title", "--json"
            ).stdout
        )
        for n in range(count)
    ]


def test_a_table_piped_at_80_columns_is_one_plain_line_per_record(url: str) -> None:
    notes = _notes(url, 3)
    for extra in ((), ("-o", "table")):
        lines = run(url, "instance", "list", "note", *extra, columns=80).stdout.splitlines()

        assert len(lines) == len(notes)  # one line per record, no title, no header
        assert sorted(line.split("\t")[0] for line in lines) == sorted(n["id"] for n in notes)
        assert all(len(line.split("\t")) == 5 for line in lines)  # id, state, version, owner, attributes
        assert not any(char in "".join(lines) for char in "│┃━─…")
        assert all("longish-title" in line for line in lines)


def test_a_search_piped_is_its_records_and_an_empty_one_no_line(url: str) -> None:
    notes = _notes(url, 3)
    found = run(url, "instance", "list", "note", "--identity", "NOTE-1", "--sort", "-identity").stdout
    tagged = run(url, "instance", "list", "note", "--where", "title=note-2-with-a-longish-title").stdout
    nothing = run(url, "instance", "list", "note", "--where", "priority=7")

    assert [line.split("\t")[0] for line in found.splitlines()] == [notes[1]["id"]]
    assert [line.split("\t")[0] for line in tagged.splitlines()] == [notes[2]["id"]]
    assert nothing.stdout == ""  # not even "(none)"
    refused = CliRunner().invoke(app, ["instance", "list", "note", "--where", "priority=high", "--url", url])
    assert refused.exit_code != 0 and "attribute" in refused.stderr


def test_output_json_and_yaml_hold_the_same_records_as_json(url: str) -> None:
    import yaml

    _notes(url, 2)
    as_json = json.loads(run(url, "instance", "list", "note", "--json").stdout)
    dash_o = json.loads(run(url, "instance", "list", "note", "-o", "json").stdout)
    as_yaml = yaml.safe_load(run(url, "instance", "list", "note", "-o", "yaml").stdout)
    before = yaml.safe_load(run(url, "-o", "yaml", "instance", "list", "note").stdout)

    assert len(as_json) == 2
    assert dash_o == as_json == as_yaml == before
    refused = CliRunner().invoke(app, ["instance", "list", "note", "--json", "-o", "yaml", "--url", url])
    assert refused.exit_code == 2


def test_a_terminal_at_80_columns_keeps_each_row_on_one_line_with_short_ids(url: str, terminal: None) -> None:
    notes = _notes(url, 3)
    shown = run(url, "instance", "list", "note", columns=80).stdout
    lines = shown.splitlines()

    assert all(len(line) <= 80 for line in lines)
    for note in notes:
        assert note["id"] not in shown
        [row] = [line for line in lines if note["id"][:8] in line]
        assert "draft" in row or note["state"] in row


def test_wide_shows_full_ids_on_a_terminal(url: str, terminal: None) -> None:
    notes = _notes(url, 2)
    shown = run(url, "instance", "list", "note", "--wide", columns=200).stdout

    assert all(note["id"] in shown for note in notes)
