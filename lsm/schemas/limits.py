"""The sizes a request may have: one definition, shared by the API, the engine and the client.

Why here (the bottom layer): every limit must fit what the stores can hold on BOTH backends,
and the API, the orchestration (identity values) and the schemas of request bodies all check
against the same numbers. Each number says which storage limit it keeps clear of:

* integers are stored in ``INTEGER`` columns, 32-bit on PostgreSQL: versions, counts and
  offsets above ``MAX_INT`` could never match a row, and used to be a 500 (SQLite refuses
  Python ints above 64 bits; PostgreSQL refuses an ``integer`` out of range);
* names (environment, entity, lifecycle, state, selector ...) live in ``VARCHAR(200)``
  columns that are part of indexes;
* identity values live in a unique index and end up in resource ids, which are index keys of
  the desired-state and deploy tables: a PostgreSQL btree row holds at most ~2700 bytes, so an
  identity of at most 255 characters (at most 1020 bytes of UTF-8) leaves room for the rest of
  a resource id;
* ids are UUIDs (36 characters); an instance reference is an id or ``<attr>=<identity>``;
* resource ids are index keys of the desired-state, deploy and discovery tables, and the
  requires indexes hold two of them in one row (``ds_shared_require``, ``lsm_resource_require``):
  two ids of ``MAX_RESOURCE_ID_BYTES`` with an environment id and the row's overhead stay under
  PostgreSQL's btree row limit (2704 bytes on 8 kB pages) even when nothing compresses, and an
  identity value of the most bytes still fits in one id. Why a limit and not an index on a hash
  of the id: the ids are primary-key and join columns of six tables and their lookups; hashing
  them all for ids that no model needs (a kilobyte names anything) would cost every query;

* handlers that write files meet the file system's limits: a name part of a path holds 255
  bytes, a path 4095 (Linux's ``NAME_MAX`` and ``PATH_MAX`` less its NUL).
"""

from __future__ import annotations

#: the largest integer accepted in a query, a path or a version field (PostgreSQL ``integer``)
MAX_INT = 2**31 - 1
#: the longest name (environment, entity, lifecycle, state, setting, selector)
MAX_NAME_LENGTH = 200
#: the longest identity value of an instance
MAX_IDENTITY_LENGTH = 255
#: the longest resource id, ``Type[agent,attribute=value]``, in bytes of UTF-8
MAX_RESOURCE_ID_BYTES = 1280
#: the longest file name (one part of a path) and path a file handler accepts, in bytes
MAX_FILE_NAME_BYTES = 255
MAX_PATH_BYTES = 4095
#: the longest id (instance, compile, environment: UUIDs)
MAX_ID_LENGTH = 36
#: the longest instance reference: an id or ``<identity_attr>=<value>``
MAX_REF_LENGTH = MAX_NAME_LENGTH + 1 + MAX_IDENTITY_LENGTH
#: the longest ``Idempotency-Key``
MAX_IDEMPOTENCY_KEY_LENGTH = 200
#: the largest request body accepted by default (bytes); ``ServerConfig.max_body_bytes``
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: the largest page of a resources or actions listing
MAX_PAGE = 1000
#: the most nodes a served graph (``/api/v1/graph/...``) may have: larger pictures are unreadable
#: and cost the server a layout; the 422 says how to narrow the graph
MAX_GRAPH_NODES = 500
#: event streams one API process serves at once, and of one caller (``lsm.api.streams``)
DEFAULT_MAX_STREAMS = 64
DEFAULT_MAX_STREAMS_PER_CALLER = 8
#: seconds a request's headers may take to arrive (``lsm.api.slow_clients``), and seconds an
#: idle keep-alive connection is kept after an answer (uvicorn's default)
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_KEEP_ALIVE = 5
