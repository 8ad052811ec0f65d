"""When the ``e2e`` load is done, and proof that it is: polling, compile history, verification.

Why "done" is read from the API and checked twice: an update is done when the exporting
compile that holds its new MTU has committed. After a PATCH the lifecycle goes update_start ->
(validation compile) update_acknowledged -> (auto promote, which requests the partial export in
the same transaction) update_inprogress, where it stays (no deploy engine yet). So the run is
settled when every accepted port is in update_inprogress AND no compile is queued or running;
then the latest desired-state version must carry each new MTU in the port's ``net::Interface``
resource, or the run fails: a fast run that lost updates must never look like a good figure.

Times come from the server's compile reports (``finished_at``), not from when we polled: the
poll interval would otherwise be part of every figure. It must not change anything.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import httpx

from benchmarks.harness import BenchmarkError
from benchmarks.load import INVENTORY, MAX_PAGES, PatchResult, Target, list_instances

COMPILES = "/api/v1/compiles"
COMPILE_PAGE = 1_000
EXPORTING = ("full", "partial")
PENDING = ("queued", "running")
SETTLED_STATE = "update_inprogress"
#: states an updated port may pass through on its way; any other state means it went wrong
IN_FLIGHT = ("update_start", "update_acknowledged")


def parse_time(value: str | None) -> float | None:
    """An API timestamp as seconds since the epoch (naive ones are UTC, as the API promises)."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


async def list_compiles(client: httpx.AsyncClient, *, stop_at: set[str]) -> list[dict[str, Any]]:
    """The compile history newest first, down to (not including) the first id in ``stop_at``
    (the compiles from before the load)."""
    out: list[dict[str, Any]] = []
    for page in range(MAX_PAGES):
        response = await client.get(COMPILES, params={"limit": COMPILE_PAGE, "offset": page * COMPILE_PAGE})
        response.raise_for_status()
        batch: list[dict[str, Any]] = response.json()
        for compile_ in batch:
            if compile_["id"] in stop_at:
                return out
            out.append(compile_)
        if len(batch) < COMPILE_PAGE:
            return out
    raise BenchmarkError(f"the compile history took more than {MAX_PAGES} pages")


async def wait_until_settled(
    client: httpx.AsyncClient,
    accepted: set[str],
    *,
    deadline: float,
    poll_s: float,
    check_alive: Any,
) -> dict[str, Any]:
    """Poll until every ``accepted`` port is in update_inprogress and no compile is pending.

    Fails when a port lands anywhere else (a rejected validation, say), when a subprocess dies
    (``check_alive()`` raises), or at ``deadline`` (``time.monotonic``). Returns how many polls
    it took and the last state counts.
    """
    polls = full_looks = 0
    counts: Counter[str] = Counter()
    while True:
        polls += 1
        check_alive()
        # the cheap looks first (one row at most each): the server shares the machine (and, with
        # its own worker, its GIL) with what it measures, so a heavy poll would slow that down;
        # the ports are listed only when no port and no compile is in flight
        if not await _any_in_flight(client) and not await any_compile_pending(client):
            full_looks += 1
            ports = await list_instances(client, "port", states=[SETTLED_STATE, *IN_FLIGHT])
            counts = Counter(p["state"] for p in ports if p["id"] in accepted)
            if sum(counts.values()) < len(accepted):
                await _explain_lost(client, accepted, {p["id"] for p in ports})
            # asked again: a port promoted between the first look and the listing queued its export
            if counts[SETTLED_STATE] == len(accepted) and not await any_compile_pending(client):
                return {"polls": polls, "full_looks": full_looks, "states": dict(counts)}
        if time.monotonic() + poll_s > deadline:
            raise BenchmarkError(
                f"not settled before the deadline: {dict(counts)} of {len(accepted)} accepted updates"
            )
        await asyncio.sleep(poll_s)


async def _any_in_flight(client: httpx.AsyncClient) -> bool:
    """Is any port still between its PATCH and its promote? (Only our ports change.)"""
    params: list[tuple[str, str | int | float | bool | None]] = [
        ("limit", 1),
        *(("state", s) for s in IN_FLIGHT),
    ]
    response = await client.get(f"{INVENTORY}/port", params=params)
    response.raise_for_status()
    return bool(response.json())


async def any_compile_pending(client: httpx.AsyncClient) -> bool:
    """Is any compile queued or running? Two one-row questions, never the history."""
    for status in PENDING:
        response = await client.get(COMPILES, params={"status": status, "limit": 1})
        response.raise_for_status()
        if response.json():
            return True
    return False


async def _explain_lost(client: httpx.AsyncClient, accepted: set[str], seen: set[str]) -> None:
    """An accepted port in none of the expected states: fail with where it went."""
    lost = sorted(accepted - seen)
    response = await client.get(f"{INVENTORY}/port/{lost[0]}")
    state = response.json().get("state") if response.status_code == 200 else f"HTTP {response.status_code}"
    raise BenchmarkError(f"{len(lost)} updated ports left the update path; {lost[0]} is in {state}")


async def verify(client: httpx.AsyncClient, targets: list[Target]) -> dict[str, Any]:
    """Check that the latest desired state carries every target's new MTU; fail loudly if not."""
    response = await client.get("/api/v1/desired_state", params={"limit": 1})
    response.raise_for_status()
    latest = response.json()[0]
    response = await client.get(f"/api/v1/desired_state/{latest['version']}/resources", timeout=300.0)
    response.raise_for_status()
    mtu: dict[tuple[str, str], int] = {}
    for resource in response.json():
        if resource["id"].startswith("net::Interface[") and resource["set"] is not None:
            mtu[(resource["set"], resource["attributes"]["name"])] = resource["attributes"]["mtu"]
    wrong = [
        f"port {t.id}: mtu {mtu.get((t.router, t.name), 'missing')}, expected {t.new_mtu}"
        for t in targets
        if mtu.get((t.router, t.name)) != t.new_mtu
    ]
    if wrong:
        raise BenchmarkError(
            f"desired state {latest['version']} lacks {len(wrong)} of {len(targets)} updates: "
            + "; ".join(wrong[:5])
        )
    return {
        "desired_state_version": latest["version"],
        "resources": latest["resource_count"],
        "verified": len(targets),
    }


def analyze(compiles: list[dict[str, Any]], results: list[PatchResult]) -> dict[str, Any]:
    """Per update, the export that included it and when it finished; counts by kind and status;
    where the compile time went (the reports' own timings, summed per kind)."""
    by_id = {c["id"]: c for c in compiles}
    accepted = {r.id: r for r in results if r.accepted}
    export_of: dict[str, dict[str, Any]] = {}  # port id -> the exporting request that named it
    validation_of: dict[str, dict[str, Any]] = {}
    for c in sorted(compiles, key=lambda c: c["created_at"]):
        for instance_id in c["requested_ids"]:
            if instance_id not in accepted:
                continue
            if c["kind"] in EXPORTING:
                export_of.setdefault(instance_id, c)
            elif c["kind"] == "validation":
                validation_of.setdefault(instance_id, c)
    missing = sorted(set(accepted) - set(export_of))
    if missing:
        raise BenchmarkError(f"{len(missing)} accepted updates have no exporting compile, e.g. {missing[0]}")
    completion: dict[str, float] = {}
    needed: list[dict[str, Any]] = []
    for instance_id, request in export_of.items():
        leader = by_id.get(request["merged_into"] or request["id"], request)
        if leader["status"] != "success":
            raise BenchmarkError(f"export {leader['id']} of port {instance_id} ended {leader['status']}")
        finished = parse_time(leader["finished_at"])
        assert finished is not None
        completion[instance_id] = finished - accepted[instance_id].answered_at
        needed.append(leader)
    needed.extend(validation_of.values())
    last = max(needed, key=lambda c: parse_time(c["finished_at"]) or 0.0)
    return {
        "end_at": parse_time(last["finished_at"]),
        "last_compile": {"id": last["id"], "kind": last["kind"], "finished_at": last["finished_at"]},
        "completion_s": completion,
        "export_per_update": {i: c["merged_into"] or c["id"] for i, c in export_of.items()},
        "counts": _counts(compiles),
        "exporting_runs": len({c["merged_into"] or c["id"] for c in export_of.values()}),
        "stages": _stages(compiles),
        "runs": _runs(compiles),
    }


def _runs(compiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every compile that ran (not merged into another), oldest first, with its epoch times:
    enough to see when the worker was busy and on what."""
    out = []
    for c in compiles:
        if c["merged_into"] is None and c["started_at"] is not None and c["finished_at"] is not None:
            out.append(
                {
                    "id": c["id"],
                    "kind": c["kind"],
                    "status": c["status"],
                    "created": parse_time(c["created_at"]),
                    "started": parse_time(c["started_at"]),
                    "finished": parse_time(c["finished_at"]),
                    "merged": len(c["report"].get("merged") or []),
                }
            )
    return sorted(out, key=lambda r: r["started"])


def busy_seconds(runs: list[dict[str, Any]], start: float, end: float) -> float:
    """How long at least one compile ran within ``start``..``end`` (the union of the runs)."""
    busy, reached = 0.0, start
    for run in runs:
        begin, finish = max(run["started"], reached), min(run["finished"], end)
        if finish > begin:
            busy += finish - begin
            reached = finish
    return busy


def _counts(compiles: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Requests by kind and status, and how many actually ran (leaders: not merged into another)."""
    out: dict[str, dict[str, int]] = {}
    for c in compiles:
        kind = out.setdefault(c["kind"], {})
        kind[c["status"]] = kind.get(c["status"], 0) + 1
        kind["requested"] = kind.get("requested", 0) + 1
        if c["merged_into"] is None:
            kind["ran"] = kind.get("ran", 0) + 1
    return out


def _stages(compiles: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per kind, over the compiles that ran: the sum of each report timing, of the wall time
    (started -> finished) and of the queue wait (created -> started), in seconds."""
    out: dict[str, dict[str, float]] = {}
    for c in compiles:
        if c["merged_into"] is not None or c["started_at"] is None or c["finished_at"] is None:
            continue
        sums = out.setdefault(c["kind"], {"runs": 0.0})
        sums["runs"] += 1
        created, started, finished = (
            parse_time(c[k]) or 0.0 for k in ("created_at", "started_at", "finished_at")
        )
        sums["wall"] = sums.get("wall", 0.0) + finished - started
        sums["queue_wait"] = sums.get("queue_wait", 0.0) + started - created
        for key, value in (c["report"].get("timings") or {}).items():
            sums[key] = sums.get(key, 0.0) + float(value)
        if "instances" in c["report"]:
            sums["instances"] = sums.get("instances", 0.0) + float(c["report"]["instances"])
    return out
