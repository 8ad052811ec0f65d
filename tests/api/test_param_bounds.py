"""Every integer a route takes from the path or the query is bounded where it is declared
(``lsm.api.params``): a number no column can hold is a 422 naming it, never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from lsm.schemas.limits import MAX_INT

HUGE = str(2**70)


def _integer_parameters(spec: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    found = []
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                options = schema.get("anyOf", [schema])
                for option in options:
                    if option.get("type") == "integer":
                        found.append((method.upper(), path, parameter["name"], option))
    return found


def test_every_integer_parameter_has_an_upper_bound_a_column_holds(http: httpx.Client) -> None:
    found = _integer_parameters(http.get("/openapi.json").json())
    assert any(name == "offset" for _, _, name, _ in found)
    unbounded = [(m, p, n) for m, p, n, schema in found if not schema.get("maximum", MAX_INT + 1) <= MAX_INT]
    assert unbounded == []


@pytest.mark.parametrize(
    "path",
    ["/api/v1/resources", "/api/v1/resources/std::File[a,path=/x]/actions", "/api/v1/discovered"],
)
def test_an_offset_beyond_64_bits_is_a_422_naming_it(http: httpx.Client, path: str) -> None:
    answer = http.get(path, params={"offset": HUGE})
    assert answer.status_code == 422, answer.text
    assert "offset" in answer.text
