"""The performance harness of lsm-engine: ``python -m benchmarks --help``.

Why a package of its own (outside ``lsm``): performance is measured, never asserted by timed
tests (docs/architecture.md §8). The harness drives the real engine (``lsm.runtime.wiring.build_api``)
over the ``examples/networks`` model on a fresh database per measurement and writes what it
measured as JSON under ``benchmarks/results/`` (gitignored), plus a table for people.

Scenarios:

* ``full``: seed N networks, time the stages of a full compile one by one (load the exporting
  instances, refine, build the export request, store) and then end to end as the compile
  worker runs it, twice (empty desired state, then after changing one network).
* ``partial``: seed N networks, store a full compile, then time one instance update as a
  partial compile plus partial export, many times (median and p95).
* ``e2e``: the whole system over real HTTP (``examples/router_port``): seed routers x 4 ports
  in bulk, start ``lsm server`` (+ ``lsm worker`` processes), PATCH many ports at once and wait
  until every update's exporting compile committed, verified in the latest desired state.
  Modules ``e2e`` (driver), ``e2e_seed`` (seeding subprocess), ``processes`` (server and
  workers), ``load`` (the PATCHes), ``completion`` (done, verified, compile history) and
  ``e2e_cli`` (options, document, table). It uses only the HTTP API, the ``lsm`` command lines
  and the inventory facade's ``import_instances``.
* ``deploy``: first deploy of 10,000 ``std::Null`` (the bundled handler) and of 10,000
  ``std::File`` resources over 10 agents (resources/s), and the engine time to schedule a
  1-set change on a 1,000- and a 100,000-set base (``deploy``, ``deploy_model``).
* ``orders``: order to ``up`` over real HTTP (``lsm server`` with ``deploy_model``: each
  ``nothing`` instance refines into one ``std::Null``): sequential orders' POST-to-``up``
  latency (p50/p95, from ``GET /api/v1/events``), then 1,000 concurrent orders until all are
  ``up`` (orders/s) (``orders``).

Layout: ``cli`` (arguments, sizes, output), ``isolate`` (one size per fresh subprocess, so
peak RSS is per size), ``full`` and ``partial`` (one size each), ``harness`` (engine, seeding,
compile-and-drain, GC accounting), ``backend`` (fresh SQLite file or PostgreSQL schema),
``stats`` (median, p95), ``report`` (the JSON document and the checks against the targets) and
``tables`` (what a person reads). ``--profile`` writes cProfile files of the measured compiles.
It must not change anything in ``lsm``: it uses the engine only, plus the compile runner's
stage methods to time the stages on their own.
"""
