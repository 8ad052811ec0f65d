"""Discovery: what discovery handlers found, stored per environment; adopting it.

* ``results``: ``record_discovery`` (the agent calls it after a discovery handler ran) and
  ``check_discovery_output`` (the same validation, without a transaction);
* the handler API itself is ``lsm.deploy.handler.DiscoveryHandler``; the SQL is in
  ``lsm.store.discovery.statements``; adoption is declared in the model (``lsm.model.adoption``)
  and carried out through the orchestration (``Create(..., adopts=...)``) by the facade.
"""

from lsm.discovery.results import MAX_FOUND, DiscoveryRecord, check_discovery_output, record_discovery

__all__ = ["MAX_FOUND", "DiscoveryRecord", "check_discovery_output", "record_discovery"]
