"""The webhook dispatcher's own state: what it keeps per webhook goes when the webhook goes."""

from __future__ import annotations

from collections.abc import Callable

from lsm.facade import RequestContext
from lsm.facade.events import EventsFacade
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.webhooks import CreateWebhook
from lsm.services.webhook_dispatch import WebhookDispatcher
from tests.webhooks.conftest import fast_policy

LOCAL = RequestContext.local()


def test_a_removed_webhooks_hold_back_is_dropped_at_the_next_round(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """A dispatcher lives as long as its process; webhooks come and go. Before, it kept a
    hold-back for every webhook it had ever served."""
    engine = engine_factory()
    dispatcher = WebhookDispatcher(engine.db, EventsFacade(engine.core), fast_policy())
    hooks = [
        engine.facades.webhooks.create(
            LOCAL, CreateWebhook(url=f"http://hooks.invalid/{i}", secret="s3cret-for-the-tests-0123456789")
        ).id
        for i in range(3)
    ]
    dispatcher.dispatch()
    assert set(dispatcher._holdbacks) == set(hooks)

    engine.facades.webhooks.delete(LOCAL, hooks[1])
    dispatcher.dispatch()
    assert set(dispatcher._holdbacks) == {hooks[0], hooks[2]}
