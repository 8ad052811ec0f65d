"""The client is light: it imports ``lsm.schemas`` and nothing of the server side.

Why a subprocess: the test process has imported the whole engine already; only a fresh
interpreter shows what ``import lsm.client`` (and the ``lsm`` command) pull in.
"""

from __future__ import annotations

import json
import subprocess
import sys

SERVER_SIDE = ("sqlalchemy", "sqlmodel", "fastapi", "starlette", "uvicorn", "lsm.store", "lsm.facade")


def imported_after(statement: str) -> set[str]:
    code = f"{statement}; import json, sys; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def test_importing_the_client_imports_nothing_of_the_server() -> None:
    modules = imported_after("import lsm.client")
    assert "lsm.schemas" in modules
    assert not any(m.startswith(SERVER_SIDE) for m in modules)


def test_the_command_line_loads_no_client_or_server_until_a_command_runs() -> None:
    modules = imported_after("import lsm.cli")
    assert not any(m.startswith((*SERVER_SIDE, "httpx", "lsm.client", "lsm.catalog")) for m in modules)


def test_the_cli_default_url_is_the_clients() -> None:
    from lsm.cli import DEFAULT_URL
    from lsm.client import DEFAULT_URL as CLIENT_DEFAULT

    assert DEFAULT_URL == CLIENT_DEFAULT
