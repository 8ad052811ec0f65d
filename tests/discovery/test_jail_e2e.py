"""Issue 31, H3 end to end: the discovery example on a served engine with the default jail (the
state directory). Each step of the reproduction fails its deploy with an error naming the rule,
nothing outside the state directory is read, written or removed, ``/api/v1/discovered`` shows
nothing of it, and the server answers all along, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import httpx

from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.store.database import Database
from lsm.testing import served_url
from tests.discovery.test_agent_discovery import AGENT, EXAMPLE, actions, order, state


def test_the_h3_reproduction_is_refused_step_by_step_and_the_server_stays_responsive(
    db: Database, tmp_path: Path
) -> None:
    root, outside = tmp_path / "state", tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow").write_text("root:secret\n")
    (outside / "shadow").chmod(0o600)
    config = ServerConfig(
        database_url=db.url,
        model=str(EXAMPLE),
        lifecycle_dirs=[str(EXAMPLE)],
        embedded_worker=False,
        embedded_agent=True,
        state_dir=str(root),
        settings={"partial_compiles": False},
    )
    engine = build_api(config, db=db)
    engine.start()
    try:
        with served_url(engine) as base, httpx.Client(base_url=base, timeout=30) as http:
            root.mkdir(exist_ok=True)
            (root / ("a" * 60 + "x")).write_text("x")  # a long name for the catastrophic pattern

            def failed_with(resource_id: str, rule: str) -> None:
                (last,) = actions(engine, resource_id)[-1:]
                assert last.status == "failed", last
                assert any(rule in line.message for line in last.messages), last.messages

            # 1. read a root-only file outside the roots through a discovery
            steal = order(
                engine, "file_discovery", {"name": "steal", "host": AGENT, "directory": str(outside)}
            )
            assert state(engine, "file_discovery", steal) == "failed"
            failed_with(f"std::FileDiscovery[{AGENT},name=steal]", "outside the directories")
            assert http.get("/api/v1/discovered").json() == []

            # 2. write a setuid file (inside the roots: the mode alone is refused)
            suid = {"host": AGENT, "path": str(root / "tool"), "content": "#!/bin/sh\n", "mode": 0o4755}
            assert state(engine, "managed_file", order(engine, "managed_file", suid)) == "failed"
            failed_with(f"std::File[{AGENT},path={root / 'tool'}]", "setuid")
            assert not (root / "tool").exists()

            # 3. write, then delete, a file outside the roots
            victim = {"host": AGENT, "path": str(outside / "shadow"), "content": "", "mode": 0o600}
            assert state(engine, "managed_file", order(engine, "managed_file", victim)) == "failed"
            failed_with(f"std::File[{AGENT},path={outside / 'shadow'}]", "outside the directories")
            assert (outside / "shadow").read_text() == "root:secret\n"

            # 4. a pattern that backtracks without end on Python's re: linear on RE2
            evil = {"name": "evil", "host": AGENT, "directory": str(root), "pattern": "(a+)+$"}
            assert http.get("/health").status_code == 200
            assert state(engine, "file_discovery", order(engine, "file_discovery", evil)) == "up"
            assert http.get("/health").status_code == 200
            assert http.get("/api/v1/discovered").json() == []  # 'aaa...x' does not match
    finally:
        engine.stop()
