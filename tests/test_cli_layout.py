"""How the ``lsm`` command is laid out: one module per command group composed by
``lsm/cli/__init__.py``, no import cycle between its modules, and the shared options
(``--url``, ``--environment``, ``--json``, ``--token``) declared once, on the root, and read
wherever they stand on the line."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from lsm.cli import app
from lsm.cli.options import SHARED_OPTIONS, hoist_shared_options

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
    assert declared.pop("lsm") == ["--environment", "--json", "--token", "--url", "-e"]
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
    assert "--url, -e/--environment, --json and --token" in listing.stdout
    assert "--token" not in server.stdout  # it runs the engine: it takes none of them
