"""The bundled handlers: the resource types every environment can deploy without writing one.

Why a source root of its own (``handlers/lsm_handlers``, docs/architecture.md §3): the core
(``lsm``) never imports it; the registry finds these handlers through the ``lsm.handlers`` entry
points like any third-party package, so a broken or missing plugin cannot break the core.

One module per family, each with its resource types and their handlers (docs/handlers.md):

* ``lsm_handlers.null``: ``std::Null``, always in its desired state (tests, benchmarks);
* ``lsm_handlers.files``: ``std::File``, a file with content and mode;
* ``lsm_handlers.http``: ``std::HttpDocument``, a JSON document at a URL;
* ``lsm_handlers.linux``: ``linux::Namespace``, ``linux::Interface``, ``linux::Veth``, a network lab;
* ``lsm_handlers.discovery``: discovery handlers (files under a directory, the objects of an HTTP
  collection, the interfaces of a network namespace) that report unmanaged resources;
* ``lsm_handlers.config``: ``ConfigFileHandler``, one JSON file per resource under the agent's
  state directory, for the types of a model that have no handler of their own.
"""
