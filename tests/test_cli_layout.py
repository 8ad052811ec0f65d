"""How the ``lsm`` command is laid out: one module per command group composed by
``lsm/cli/__init__.py``, no import cycle between its modules, the shared options (``--url``,
``--environment``, ``--json``, ``-o``, ``--wide``, ``--token``) declared once, on the root, and
read wherever they stand on the line; and how its tables are laid out (``lsm.cli.layout``):
the real ``lsm resources`` piped prints one resource per line at 80 columns."""

from __future__ import annotations

import ast
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from lsm.cli import app, layout, render
from lsm.cli.options import SHARED_OPTIONS, hoist_shared_options
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.deploy.seed import rid, seed_states, state

CLI = Path(__file__).resolve().parent.parent / "lsm" / "cli"
SUBMODULES = {p.stem for p in CLI.glob("*.py")} - {"__init__", "__main__"}


def _cli_imports(path: Path) -> set[str]:
    """The ``lsm.cli`` modules ``path`` imports (``lsm.cli`` itself for the package's names)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name == "lsm.cli" or a.name.startswith("lsm.cli."))
        elif isinstance(node, ast.ImportFrom) and node.module == "lsm.cli":
            found.update(f"lsm.cli.{a.name}" if a.name in SUBMODULES else "lsm.cli" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lsm.cli."):
            found.add(str(node.module))
    return found


def test_no_command_module_imports_the_package_back() -> None:
    offenders = {name: sorted(_cli_imports(CLI / f"{name}.py")) for name in SUBMODULES}
    assert {name: imports for name, imports in offenders.items() if "lsm.cli" in imports} == {}


def test_the_cli_modules_import_each_other_without_a_cycle() -> None:
    graph = {f"lsm.cli.{name}": _cli_imports(CLI / f"{name}.py") for name in SUBMODULES}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for target in graph.get(module, ()):
            visit(target, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())


def _commands(group: Any, prefix: str = "lsm") -> list[tuple[str, Any]]:
    found = [(prefix, group)]
    for name, command in getattr(group, "commands", {}).items():
        found.extend(_commands(command, f"{prefix} {name}"))
    return found


def test_the_shared_options_are_declared_once_on_the_root() -> None:
    root = typer.main.get_command(app)
    declared = {
        where: sorted(opt for param in command.params for opt in param.opts if opt in SHARED_OPTIONS)
        for where, command in _commands(root)
    }
    assert declared.pop("lsm") == ["--environment", "--json", "--token", "--url", "--wide", "-e"]
    assert {where: opts for where, opts in declared.items() if opts} == {}


@pytest.mark.parametrize(
    ("line", "hoisted"),
    [
        (["instance", "list", "router", "--url", "U"], ["--url", "U", "instance", "list", "router"]),
        (["--url", "U", "instance", "list", "router"], ["--url", "U", "instance", "list", "router"]),
        (
            ["desired-state", "diff", "1", "2", "--json", "-e", "lab", "--token=T"],
            ["--json", "-e", "lab", "--token=T", "desired-state", "diff", "1", "2"],
        ),
        (["instance", "show", "note", "title=x", "-elab"], ["-elab", "instance", "show", "note", "title=x"]),
        (["x", "--", "--json"], ["x", "--", "--json"]),  # after -- everything is an argument
        (["instance", "list", "--url"], ["instance", "list", "--url"]),  # no value: the command says so
        (["resources", "--status", "failed"], ["resources", "--status", "failed"]),
        (["resources", "-o", "yaml", "--wide"], ["-o", "yaml", "--wide", "resources"]),
        (["resources", "--output=json", "-otable"], ["--output=json", "-otable", "resources"]),
        # an -o whose value is no output form is the command's own (a file to write)
        (["graph", "owners", "-o", "owners.svg"], ["graph", "owners", "-o", "owners.svg"]),
        (["graph", "owners", "--output=x.dot"], ["graph", "owners", "--output=x.dot"]),
    ],
)
def test_shared_options_are_read_wherever_they_stand(line: list[str], hoisted: list[str]) -> None:
    assert hoist_shared_options(line) == hoisted


def test_a_shared_option_after_the_command_reaches_it() -> None:
    """An unreachable server names the --url it was given, before or after the command."""
    runner = CliRunner()
    for line in (
        ["--url", "http://127.0.0.1:9", "catalog", "list"],
        ["catalog", "list", "--url", "http://127.0.0.1:9"],
        ["catalog", "list", "--url=http://127.0.0.1:9", "-e", "lab", "--json"],
    ):
        result = runner.invoke(app, line, env={"COLUMNS": "200", "LSM_URL": None})
        assert result.exit_code == 1, result.output
        assert "cannot reach the lsm server at http://127.0.0.1:9" in result.stderr


def test_a_commands_help_points_at_the_shared_options() -> None:
    runner = CliRunner()
    listing = runner.invoke(app, ["instance", "list", "--help"], env={"COLUMNS": "200"})
    server = runner.invoke(app, ["server", "--help"], env={"COLUMNS": "200"})

    assert listing.exit_code == 0 and server.exit_code == 0
    assert "--url, -e/--environment, --json, -o json|yaml|table, --wide and --token" in listing.stdout
    assert "--token" not in server.stdout  # it runs the engine: it takes none of them


#: resource ids long enough that a table laid out for 80 columns would fold them
LONG_IDS = [
    "std::File[h1:x,path=/etc/lsm,a=b:c/motd]",
    *(rid("net::Host", "agent-one", f"host-with-a-long-name-{n}") for n in range(3)),
    rid("net::Port", "agent-two", "port-with-a-long-name"),
]


def test_lsm_resources_piped_prints_one_resource_per_line_at_80_columns(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.deploy.filemodel")
    seed_states(
        engine.db,
        engine.context(None).env_id,
        [state(i, status="failed", last_error="unreachable\nsecond line") for i in LONG_IDS],
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSM_")}
    env.update(PYTHONPATH=str(CLI.parent.parent), COLUMNS="80")
    with served_url(engine) as url:
        line = f"{shlex.quote(sys.executable)} -m lsm.cli resources --url {shlex.quote(url)} | cat"
        piped = subprocess.run(line, shell=True, capture_output=True, text=True, env=env, check=False)

    assert piped.returncode == 0, piped.stderr
    rows = piped.stdout.splitlines()  # records only: no title, no header
    assert sorted(row.split("\t")[0] for row in rows) == sorted(LONG_IDS)  # one line each, ids whole
    assert all(row.split("\t")[3] == "(shared)" for row in rows)  # the set, named
    assert all(row.split("\t")[2] == "failed" and row.endswith("unreachable") for row in rows)
    assert max(len(row) for row in rows) > 80  # not folded to the width it was given


def _shown(table: Any, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, force_terminal=True)
    console.print(table)
    return console.export_text()


def test_a_fitted_table_drops_or_cuts_the_last_columns_and_shortens_ids() -> None:
    uuid = "0b9f6d0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    table = render.table("things", ("id", "name", "note"))
    table.add_row(uuid, "short", "x" * 60)

    narrow, cut = layout.fitted(table, 25), layout.fitted(table, 40)
    narrow_text, cut_text = _shown(narrow, 25), _shown(cut, 40)

    assert [column.header for column in narrow.columns] == ["id", "name"]
    assert "1 column(s) hidden" in narrow_text
    assert [column.header for column in cut.columns] == ["id", "name", "note"]
    assert "…" in cut_text and "x" * 60 not in cut_text and "a column is cut" in cut_text
    for text, width in ((narrow_text, 25), (cut_text, 40)):
        assert uuid[:8] in text and uuid not in text
        assert all(len(line) <= width for line in text.splitlines())
        assert sum(uuid[:8] in line for line in text.splitlines()) == 1  # the row is one line
    assert layout.plain_lines(table) == [f"{uuid}\tshort\t{'x' * 60}"]  # the record alone
    section = ["things", "id\tname\tnote", f"{uuid}\tshort\t{'x' * 60}"]  # a part after the first
    assert layout.plain_lines(table, section=True) == section
