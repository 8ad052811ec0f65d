"""Which models an environment may run: the ones the operator offered, nothing else.

Why: a model is Python code that the server imports and runs as its own user. Whoever may name
a model may run code on the server, so the API only chooses among what the operator put
there: a model by name (``lsm server --model name=path``, ``models = {name = path}`` in
lsm.toml; the server's own ``model`` counts too), or a path under a directory the operator
allowed (``model_dirs``). ``ModelChoices.resolve`` decides from the text alone, before
anything is imported: a path is resolved (``..`` and symbolic links followed) and must lie under
an allowed directory; a module path is never imported unless it is a named model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from lsm.errors import InvalidInput


def model_name(spec: str) -> str:
    """The name a model is offered under when the operator gave none: its file or module name."""
    if "/" in spec or spec.endswith(".py") or Path(spec).exists():
        path = Path(spec)
        return path.stem if path.suffix == ".py" else path.name
    return spec.rsplit(".", 1)[-1]


def parse_model_option(value: str) -> tuple[str, str]:
    """``name=path`` or ``path`` (named after it) -> ``(name, path)``."""
    name, sep, spec = value.partition("=")
    if sep and name.strip() and spec.strip() and "/" not in name:
        return name.strip(), spec.strip()
    return model_name(value), value


class ModelChoices:
    """The models an environment may be given (see the module docstring)."""

    def __init__(self, named: Mapping[str, str], directories: Iterable[str | Path] = ()) -> None:
        self.named = dict(named)
        self.directories = [Path(d).resolve() for d in directories]

    def resolve(self, choice: str) -> str:
        """The model to load for ``choice`` (a name, a named model's path, or an allowed path);
        ``InvalidInput`` naming ``model`` otherwise. Imports nothing."""
        if not _plain_text(choice):
            raise InvalidInput("a model name or path can not hold NUL or lone surrogates", field="model")
        if choice in self.named:
            return self.named[choice]
        if choice in self.named.values():
            return choice
        for base in self.directories:
            candidate = (base / choice).resolve()  # an absolute choice stays itself
            if candidate != base and candidate.is_relative_to(base) and candidate.exists():
                return str(candidate)
        offered = ", ".join(sorted(self.named)) or "none"
        raise InvalidInput(
            f"model {choice!r} is not one this server offers (named models: {offered}; "
            "or a path under a directory of the server's model_dirs)",
            field="model",
        )


def _plain_text(value: str) -> bool:
    """No NUL (no path or database column holds one) and no lone surrogate (not encodable)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
