"""A failed exporting compile reaches the instance-state webhook: the instance's move to
``failed`` is delivered, to a real receiver, with the line that names the compile and the cause
(docs/semantics.md §6). Real engine (compile worker in its loop) on every backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.webhooks import CreateWebhook
from tests.webhooks.conftest import fast_config
from tests.webhooks.receiver import Receiver, event_of

LOCAL = RequestContext.local()
SECRET = "s3cret-for-the-tests-0123456789"

#: a gizmo named ``bad...`` passes its validation and breaks its exporting compile (the model
#: runs in the compile pool's processes, so the failure is in the model, not in a test global)
MODEL = """
from collections.abc import Iterator

import lsm
from lsm.model.context import current_compile


class Gizmo(lsm.ServiceEntity):
    name: str


gizmo = lsm.Binding(Gizmo, lifecycle="simple", identity="name")


class Cog(lsm.Resource, type="test::Cog", id_attribute="name"):
    name: str


@lsm.implementation(gizmo)
def cogs(g: lsm.Service[Gizmo]) -> Iterator[lsm.Resource]:
    if g.name.startswith("bad") and not current_compile().validation:
        raise ValueError(f"gizmo {g.name} is bad on purpose")
    yield Cog(agent="a", name=g.name)
"""


def test_an_instance_moved_by_a_failed_export_is_delivered_with_the_compile_and_the_cause(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    model = tmp_path / "gizmos.py"
    model.write_text(MODEL)
    engine = engine_factory(str(model), embedded_worker=True, config=fast_config(tmp_path))
    engine.facades.webhooks.create(
        LOCAL, CreateWebhook(url=receiver.url, secret=SECRET, events=["instance_state"])
    )
    bad = engine.facades.inventory.create_instance(LOCAL, "gizmo", {"name": "bad1"})

    accepted = receiver.wait_for(
        event_of("instance_state", instance_id=bad.id, target="failed"), "the failed export's move"
    )

    (moved,) = [r.payload["data"] for r in accepted if r.payload["data"].get("target") == "failed"]
    (line,) = [
        e
        for e in engine.facades.inventory.instance_log(LOCAL, "gizmo", bad.id)
        if e.trigger == "export_failed"
    ]
    assert (moved["source"], moved["trigger"], moved["is_error"]) == ("creating", "export_failed", True)
    assert moved["compile_id"] == line.compile_id is not None
    assert moved["message"] == line.message
    assert f"exporting compile {line.compile_id} failed: model_error" in moved["message"]
    assert "gizmo bad1 is bad on purpose" in moved["message"]
    assert receiver.all_signed_with(SECRET)
