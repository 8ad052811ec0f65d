"""The deploy and orders benchmarks' model: one service whose instance refines into ``std::Null``.

Why the bundled ``std::Null`` (``lsm_handlers.null``) and no handler of our own: the figures
must be those of the handler users deploy, found the way users find it (the ``lsm.handlers``
entry point), so a change to that handler or to the registry shows in the benchmark. Its cost is
nothing, so what is measured is the engine: plan, claim, run under metaparameters, result
writes and the lifecycle feedback.

``nothing`` instances (``orders`` scenario) each refine into one ``std::Null`` on the agent
``agent-<n % 10>`` (``n`` from the instance's ``name``), so orders spread over ten agent names.
"""

from __future__ import annotations

from collections.abc import Iterator

from lsm_handlers.null import Null

import lsm

AGENTS = 10


class Nothing(lsm.ServiceEntity):
    name: str


nothing = lsm.Binding(Nothing, lifecycle="simple", name="nothing")


@lsm.implementation(nothing)
def nothing_resource(n: lsm.Service[Nothing]) -> Iterator[lsm.Resource]:
    digits = "".join(c for c in n.name if c.isdigit()) or "0"
    yield Null(agent=f"agent-{int(digits) % AGENTS}", name=n.name, purged=n.purge_resources)
