"""The documentation stands on its own, and what cites it points at something that exists.

Code, tests and pages cite ``docs/<page>.md`` and sections as ``docs/<page>.md §N``; inside a
page, a link ``[x](<page>.md) §N`` or a bare ``§N`` (same page) does the same. Every cited page
must exist, every cited section must be a numbered heading (``## N. Title``) of that page, and
every export rule the code can report must be a numbered item of the rules section. Nothing in
the repository may refer to documents outside it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: folders that are not the project's own text (tools, caches, environments, outputs)
SKIP_DIRS = {
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "build",
    "dist",
    "results",
}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".sh", ""}

#: a page cited from anywhere: docs/<name>.md
CITED_PAGE = re.compile(r"docs/([A-Za-z0-9_-]+\.md)\b")
#: a section cited from anywhere: docs/<name>.md §N (also "docs/<name>.md, §N")
CITED_SECTION = re.compile(r"docs/([A-Za-z0-9_-]+\.md)\)?[,:]?\s+§\s?(\d+)")
#: inside a page: [text](<name>.md) §N, or a bare §N meaning this page
PAGE_LINK = re.compile(r"\]\(([A-Za-z0-9_-]+\.md)(?:#[^)]*)?\)")
PAGE_SECTION = re.compile(r"(?:\]\(([A-Za-z0-9_-]+\.md)(?:#[^)]*)?\)[,:]?\s+)?§\s?(\d+)")
NUMBERED_HEADING = re.compile(r"^#{1,6}\s+(\d+)\.\s", re.MULTILINE)

# Spelled in pieces so that this file does not match itself.
OUTSIDE_REFERENCES = re.compile(
    "|".join(
        [
            r"\b" + "SEMANTICS" + r"\.md\b",
            r"\b" + "DESIGN" + r"\.md\b",
            r"\b" + "API" + r"\.md\b",
            "shared" + "/",
            r"\.\./" + "shared",
        ]
    )
)


def repository_files() -> Iterator[Path]:
    """Every text file of the project, not descending into environments and caches."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix in TEXT_SUFFIXES:
                yield path


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""  # a binary file without a suffix


def sections(page: Path) -> set[int]:
    return {int(n) for n in NUMBERED_HEADING.findall(page.read_text(encoding="utf-8"))}


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def citations() -> Iterator[tuple[str, str, int | None]]:
    """(where, page name, section or None) for every citation in the repository."""
    for path in repository_files():
        text = read(path)
        where = str(path.relative_to(ROOT))
        in_docs = path.parent == DOCS and path.suffix == ".md"
        for match in CITED_PAGE.finditer(text):
            yield f"{where}:{line_of(text, match.start())}", match.group(1), None
        for match in CITED_SECTION.finditer(text):
            yield f"{where}:{line_of(text, match.start())}", match.group(1), int(match.group(2))
        if in_docs:
            for match in PAGE_LINK.finditer(text):
                yield f"{where}:{line_of(text, match.start())}", match.group(1), None
            for match in PAGE_SECTION.finditer(text):
                page = match.group(1) or path.name
                yield f"{where}:{line_of(text, match.start())}", page, int(match.group(2))


def test_the_documentation_exists_and_its_index_lists_every_page() -> None:
    pages = sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md")
    assert pages, "docs/ has no pages"
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    missing = [name for name in pages if f"]({name})" not in index]
    assert missing == [], f"docs/README.md does not list: {', '.join(missing)}"


def test_every_cited_page_and_section_exists() -> None:
    found = list(citations())
    assert found, "no citation of docs/ found: the scan is broken"
    problems = []
    known: dict[str, set[int]] = {}
    for where, name, section in found:
        page = DOCS / name
        if not page.is_file():
            problems.append(f"{where}: cites docs/{name}, which does not exist")
            continue
        numbers = known.setdefault(name, sections(page))
        if section is not None and section not in numbers:
            problems.append(f"{where}: cites docs/{name} §{section}, which is no numbered heading there")
    assert problems == [], "\n".join(problems)


def test_every_export_rule_the_code_reports_is_documented() -> None:
    merge = (ROOT / "lsm" / "desired_state" / "merge.py").read_text(encoding="utf-8")
    reported = {int(n) for n in re.findall(r"_add\(\s*(\d+)\s*,", merge)}
    assert reported, "no rule numbers found in lsm/desired_state/merge.py: the scan is broken"
    semantics = (DOCS / "semantics.md").read_text(encoding="utf-8")
    rules_section = re.search(r"^## 4\. .*?(?=^## \d+\. |\Z)", semantics, re.MULTILINE | re.DOTALL)
    assert rules_section is not None, "docs/semantics.md has no §4"
    documented = {int(n) for n in re.findall(r"^(\d+)\. ", rules_section.group(0), re.MULTILINE)}
    assert reported <= documented, f"rules reported but not in docs/semantics.md §4: {reported - documented}"
    assert documented == set(range(1, len(documented) + 1)), "the rules of §4 are not numbered 1..N"


def test_nothing_refers_to_documents_outside_the_repository() -> None:
    hits: list[str] = []
    for path in repository_files():
        text = read(path)
        hits.extend(
            f"{path.relative_to(ROOT)}:{line_of(text, m.start())}: {m.group(0)}"
            for m in OUTSIDE_REFERENCES.finditer(text)
        )
    assert hits == [], "references outside the repository:\n" + "\n".join(hits)
