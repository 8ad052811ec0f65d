"""Tests of discovery: the results inventory, adoption, and the bundled discovery handlers.

``plant_files`` is shared with the end-to-end tests: it writes files under a directory and
returns the ``std::File`` ids a file-discovery run must find for them.
"""

from __future__ import annotations

import os
from pathlib import Path


def file_id(agent: str, path: Path | str) -> str:
    """The ``std::File`` id of ``path`` on ``agent`` (what the bundled file discovery reports)."""
    return f"std::File[{agent},path={os.path.normpath(str(path))}]"


def plant_files(directory: Path, files: dict[str, str], *, agent: str, mode: int = 0o640) -> dict[str, str]:
    """Write ``{name: content}`` under ``directory`` with ``mode``; ``{std::File id: name}``."""
    directory.mkdir(parents=True, exist_ok=True)
    planted = {}
    for name, content in files.items():
        path = directory / name
        path.write_text(content)
        path.chmod(mode)
        planted[file_id(agent, path)] = name
    return planted


def run_file_discovery(
    directory: Path, *, agent: str, pattern: str = ".*", name: str = "files", state_dir: Path | None = None
) -> tuple[str, dict[str, object]]:
    """Run the bundled ``std::FileDiscovery`` handler as the agent would: ``(its id, what it found)``."""
    from lsm_handlers.discovery import FileDiscovery, FileDiscoveryHandler

    from lsm.deploy.handler import HandlerContext

    resource = FileDiscovery(agent=agent, name=name, directory=str(directory), pattern=pattern)
    ctx = HandlerContext(resource.id, state_dir=state_dir or directory)
    FileDiscoveryHandler().deploy(ctx, resource)
    assert ctx.action == "discover" and ctx.discovered is not None
    return resource.id, ctx.discovered
