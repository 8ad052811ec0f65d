"""A table model's row as plain values, its defaults filled in, for Core inserts.

Why: building a SQLModel table object is costly (pydantic looks at every default factory's
signature on each construction) and its insert then goes through the ORM's unit of
work. The orchestration writes an event line and often a compile request on every transfer,
hundreds per second under a burst, and nothing reads those objects back in the transaction that
writes them: it inserts them as values (``row_values`` + one ``executemany`` per table) instead.
The defaults are the model's own (``Field(default=...)`` / ``default_factory``), so a row
written either way is the same row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic_core import PydanticUndefined
from sqlmodel import SQLModel

_Default = tuple[str, Any, Callable[[], Any] | None]


@functools.cache
def _defaults(model: type[SQLModel]) -> tuple[tuple[_Default, ...], frozenset[str]]:
    """Per field: its default or factory; and every field name. Autoincrement keys are left out
    (the database numbers them; an explicit NULL would be refused by PostgreSQL)."""
    table = model.metadata.tables[str(model.__tablename__)]
    out: list[_Default] = []
    for name, info in model.model_fields.items():
        column = table.c.get(name)
        if column is not None and column.primary_key and info.default is None:
            continue  # e.g. an integer id the database assigns
        factory = info.default_factory
        if factory is not None:
            out.append((name, None, factory))  # type: ignore[arg-type]  # pydantic types a factory as maybe taking the data; a row's take none
        elif info.default is not PydanticUndefined:
            out.append((name, info.default, None))
    return tuple(out), frozenset(model.model_fields)


def row_values(model: type[SQLModel], **given: Any) -> dict[str, Any]:
    """``given`` plus the model's default for every field not given (required ones must be)."""
    defaults, names = _defaults(model)
    unknown = set(given) - names
    if unknown:
        raise TypeError(f"{model.__name__} has no field {', '.join(sorted(unknown))}")
    values = dict(given)
    for name, default, factory in defaults:
        if name not in values:
            values[name] = factory() if factory is not None else default
    return values


__all__ = ["row_values"]
