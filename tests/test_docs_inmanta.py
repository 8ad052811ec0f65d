"""docs/coming-from-inmanta.md names on our side only what exists.

The guide maps Inmanta's names to ours in tables whose first column is Inmanta's; everything
else on the page (our column, the notes, the prose, the Python examples) is ours. So outside
the Inmanta column every route must be a route of the app (with its method, when one is given),
every ``lsm.`` (and ``lsm_handlers.``, ``lsm_selectors.``) name must import, every ``Client.``
method must exist, and every repository path must exist. In the settings table our column holds
only settings: an environment setting or a key of ``lsm.toml``. Any other name in our column
must occur in the code, so that a name that was renamed or never existed fails here.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from lsm.api.access import route_table
from lsm.api.app import ROUTERS
from lsm.api.console import CONSOLE_ROUTERS
from lsm.client import Client
from lsm.runtime.config import ServerConfig
from lsm.store.environments.settings import EnvironmentSettings

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "coming-from-inmanta.md"
#: where our names live (the guide's names must occur in one of these)
CODE_DIRS = ("lsm", "selectors", "handlers", "lifecycles", "examples")

TICKED = re.compile(r"`([^`]+)`")
ROUTE = re.compile(r"^(?:(GET|POST|PUT|PATCH|DELETE) )?(/[A-Za-z0-9_{}/.-]*)$")
PYTHON_NAME = re.compile(r"^@?((?:lsm|lsm_handlers|lsm_selectors)(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?$")
CLIENT_METHOD = re.compile(r"^(Client|AsyncClient)\.([a-z_]\w*)$")
#: a command line of ours: ``lsm export MODEL --partial --delete-resource-set NAME``
COMMAND = re.compile(r"^lsm ([a-z][a-z-]*)((?: (?:[A-Z]+|--[a-z][a-z-]*))*)$")
PATH = re.compile(r"^(?:examples|handlers|selectors|lifecycles|lsm|docs|tests)/[\w./-]*$")
IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
#: files named like Python modules
FILES = {"lsm.toml", "lsm.db"}


def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def ours(text: str) -> Iterator[tuple[int, str, str]]:
    """``(line, where, token)`` of every backticked token on our side of the page.

    ``where`` is ``ours`` (our column of a mapping table), ``setting`` (our column of the
    settings table), ``python`` (a name of a Python example) or ``text`` (notes and prose).
    Code blocks other than Python ones are Inmanta's and are skipped.
    """
    header: list[str] | None = None
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence is not None:
            if fence == "python":
                for name in re.findall(r"(?<![\w.])lsm(?:\.\w+)+", line):
                    yield number, "python", name
                imported = re.match(r"\s*from (lsm[\w.]*) import (.+?)(?:\s+as \w+)?\s*(?:#.*)?$", line)
                if imported:
                    for name in imported.group(2).split(","):
                        yield number, "python", f"{imported.group(1)}.{name.strip().split(' ')[0]}"
            continue
        if not line.startswith("|"):
            header = None
            yield from ((number, "text", token) for token in TICKED.findall(line))
            continue
        row = cells(line)
        if header is None:
            header = row
            continue
        if set(line) <= set("|-: "):
            continue
        for index, cell in enumerate(row):
            title = header[index].lower() if index < len(header) else ""
            if title.startswith("inmanta"):
                continue
            kind = "text"
            if title.startswith("lsm-engine"):
                kind = "setting" if "setting" in title else "ours"
            yield from ((number, kind, token) for token in TICKED.findall(cell))


@cache
def app_routes() -> frozenset[tuple[str, str]]:
    table = route_table(ROUTERS) + route_table(CONSOLE_ROUTERS)
    return frozenset((method, re.sub(r":path}", "}", path)) for method, path, _ in table)


def normalized(path: str) -> str:
    """Path parameters compared by position, not by name (``{id}`` is ``{ref}``)."""
    return re.sub(r"{[^}]+}", "{}", path)


def route_exists(method: str | None, path: str) -> bool:
    if path == "/metrics" and method in (None, "GET"):
        return any(p == "/metrics" for _, p in app_routes())
    wanted = normalized(path)
    return any(normalized(p) == wanted and method in (None, m) for m, p in app_routes())


def resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                value = getattr(value, attribute)
        except AttributeError:
            return False
        return True
    return False


@cache
def code_text() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for folder in CODE_DIRS
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".yaml", ".toml"} and "__pycache__" not in path.parts
    ) + (ROOT / "pyproject.toml").read_text(encoding="utf-8")


@cache
def entry_point_groups() -> frozenset[str]:
    """``lsm.selectors``, ``lsm.handlers``...: plugin groups, named like modules but none."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return frozenset(project["entry-points"])


def command_problem(name: str, words: str) -> str | None:
    """Why ``lsm NAME WORDS`` is no command line of ours: an unknown command or option."""
    import typer.main

    from lsm.cli import app

    group: Any = typer.main.get_command(app)
    command = group.commands.get(name)
    if command is None:
        return "is no command of lsm"
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
    unknown = [w for w in words.split() if w.startswith("--") and w not in options]
    return f"has options the command does not take: {unknown}" if unknown else None


def known_setting(name: str) -> bool:
    return name in EnvironmentSettings.model_fields or name in ServerConfig.model_fields


def problem(where: str, token: str) -> str | None:
    """Why ``token`` names nothing of ours, or ``None`` when it does (or is not a name)."""
    if token in FILES or token in entry_point_groups():
        return None
    if route := ROUTE.match(token):
        method, path = route.group(1), route.group(2)
        if path.startswith(("/lsm/", "/api/", "/metrics", "/health")) and not route_exists(method, path):
            return "is no route of the app"
        return None
    if PATH.match(token):
        return None if (ROOT / token.rstrip("/")).exists() else "is no path of the repository"
    if python := PYTHON_NAME.match(token):
        return None if resolves(python.group(1)) else "does not import"
    if command := COMMAND.match(token):
        return command_problem(command.group(1), command.group(2))
    if client := CLIENT_METHOD.match(token):
        return None if callable(getattr(Client, client.group(2), None)) else "is no method of the client"
    if where == "setting":
        return None if known_setting(token) else "is no environment setting and no lsm.toml key"
    if where == "ours" and IDENTIFIER.match(token):
        return None if re.search(rf"\b{re.escape(token)}\b", code_text()) else "occurs nowhere in the code"
    if where == "ours":
        return "is not a route, path, Python name, client method, setting or identifier"
    return None


def test_the_guide_exists_and_is_indexed() -> None:
    assert GUIDE.is_file()
    assert "](coming-from-inmanta.md)" in (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    assert "docs/coming-from-inmanta.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_name_on_our_side_of_the_guide_exists() -> None:
    found = list(ours(guide()))
    kinds = {where for _, where, _ in found}
    assert {"ours", "setting", "python", "text"} <= kinds, f"the scan found only {kinds}: it is broken"
    problems = [
        f"docs/coming-from-inmanta.md:{number}: `{token}` {why}"
        for number, where, token in found
        if (why := problem(where, token)) is not None
    ]
    assert problems == [], "\n".join(problems)


def test_the_checks_refuse_what_does_not_exist() -> None:
    """The checks themselves: a wrong name of each kind is caught (else the test above proves nothing)."""
    assert problem("ours", "POST /lsm/v1/callbacks") is not None
    assert problem("ours", "DELETE /api/v1/compiles/{compile_id}") is not None
    assert problem("ours", "POST /lsm/v1/service_inventory/{entity}/{id}/state") is None
    assert problem("setting", "lsm_partial_compile") is not None
    assert problem("setting", "partial_compiles") is None and problem("setting", "embedded_worker") is None
    assert problem("python", "lsm.ServiceEntityBinding") is not None
    assert problem("python", "lsm.selection.lsm_compat.global_cache.set_selector_factory") is None
    assert problem("text", "Client.lsm_services_create") is not None
    assert problem("ours", "examples/nowhere") is not None
    assert problem("ours", "owned_resources") is not None
    assert problem("ours", "lsm export MODEL --partial --soft-delete") is None
    assert problem("ours", "lsm export MODEL --partial --purge") is not None
    assert problem("ours", "lsm import MODEL") is not None


def test_every_environment_setting_is_mapped() -> None:
    """A setting added to the engine gets its line in the guide's settings table."""
    named = {token for _, where, token in ours(guide()) if where == "setting"}
    missing = sorted(set(EnvironmentSettings.model_fields) - named)
    assert missing == [], f"settings not in docs/coming-from-inmanta.md §5: {missing}"
