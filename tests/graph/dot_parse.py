"""A small reader for the DOT our writer produces, so tests check structure, not strings.

It tokenizes quoted strings the way Graphviz does (``\\"`` inside, everything else literal) and
reads ``"id" [attrs];`` node statements and ``"a" -> "b" [attrs];`` edge statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_TOKEN = re.compile(r'\s*("(?:\\.|[^"\\])*"|->|[{}\[\];,=]|[A-Za-z_][A-Za-z0-9_.]*|-?\d+(?:\.\d+)?)', re.S)


@dataclass
class Dot:
    name: str
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


def _unquote(token: str) -> str:
    if token.startswith('"'):
        body = token[1:-1]
        return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), body)
    return token


def tokens(text: str) -> list[str]:
    out: list[str] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        assert match, f"unexpected DOT text at {position}: {text[position : position + 40]!r}"
        out.append(match.group(1))
        position = match.end()
    return out


def parse(text: str) -> Dot:
    """Parse one ``digraph NAME { ... }``; fails the test on anything else."""
    toks = tokens(text)
    assert toks[0] == "digraph" and toks[2] == "{" and toks[-1] == "}", toks[:3]
    dot = Dot(name=_unquote(toks[1]))
    i = 3
    end = len(toks) - 1

    def attrs() -> dict[str, str]:
        nonlocal i
        found: dict[str, str] = {}
        if i < end and toks[i] == "[":
            i += 1
            while toks[i] != "]":
                key, eq, value = toks[i], toks[i + 1], toks[i + 2]
                assert eq == "=", toks[i : i + 3]
                found[key] = _unquote(value)
                i += 3
                if toks[i] == ",":
                    i += 1
            i += 1
        return found

    while i < end:
        first = toks[i]
        i += 1
        if first in ("node", "edge"):
            attrs()
        elif i < end and toks[i] == "=":
            i += 2  # graph attribute: rankdir=LR
        elif i < end and toks[i] == "->":
            target = toks[i + 1]
            i += 2
            dot.edges.append((_unquote(first), _unquote(target), attrs()))
        else:
            assert first.startswith('"'), f"node ids are quoted: {first}"
            dot.nodes[_unquote(first)] = attrs()
        assert toks[i] == ";", f"statement not closed by ';' but {toks[i]!r}"
        i += 1
    return dot
