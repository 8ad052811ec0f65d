"""The body screen's invariants (``lsm.api.screening``), over arbitrary JSON values.

* a value is refused exactly when it holds a string (or key) with a NUL or a lone surrogate, or
  a non-finite number: exactly what no store and no JSON answer can hold;
* the fast path never lets a bad body through: whenever a body holds a bad value, one scan
  of its bytes says it must be walked, in whatever encoding Python's JSON parser accepts.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lsm.api.screening import body_problems, may_hold_problems

texts = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=8)
leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | texts
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=20,
)


def storable(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" not in value and all(not 0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(storable(v) for v in value)
    if isinstance(value, dict):
        return all(storable(k) and storable(v) for k, v in value.items())
    return True


@settings(max_examples=300, derandomize=True, database=None)
@given(values)
def test_refused_exactly_when_not_storable(value: Any) -> None:
    assert (body_problems(value) == []) == storable(value)


@settings(max_examples=300, derandomize=True, database=None)
@given(values, st.sampled_from(["utf-8", "utf-16", "utf-32"]), st.booleans())
def test_the_fast_path_never_lets_a_bad_body_through(value: Any, encoding: str, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    try:
        raw = text.encode(encoding, "surrogatepass")
    except UnicodeEncodeError:
        return
    if body_problems(json.loads(raw)):  # what the server would parse holds a bad value
        assert may_hold_problems(raw)
    if not storable(value):
        assert body_problems(json.loads(raw))
