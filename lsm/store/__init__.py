"""The store: the database layer (docs/architecture.md §2), the only code that writes SQL.

Layout: the database itself and what every aggregate shares sit at the top (``database``,
``schema`` and Alembic's ``migrations``, the core ``tables``, ``transient``,
``advisory_locks``, ``batches``, ``row_values``, ``write_gate``, ``checkpoint``, ``leases``,
``idempotency``, ``audit``, ``feed``, ``metrics``, ``metric_counters``,
``diagnosis_queries``); each aggregate has a subpackage: ``instances``, ``compiles``,
``desired_state``, ``deploy``, ``discovery``, ``lsm.store.webhooks.statements``, ``auth``, ``environments``.
Callers above call named functions; response models are built above the store
(``lsm.facade.views``).
"""
