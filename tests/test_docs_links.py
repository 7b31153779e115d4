"""The user documentation's links resolve, and ``docs/`` holds documentation only (issue 53).

A link is a Markdown inline link or image (``[text](target)``, ``![alt](target)``), a reference definition
(``[name]: target``) or an HTML ``href``/``src``, outside code blocks and code spans. A relative target must name an
existing file or folder, relative to the page that links to it; a ``#fragment`` on a Markdown page must be one of its
headings' anchors as GitHub makes them (lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``, ``-1``,
``-2`` ... for repeated headings) or an ``<a id=...>``/``<a name=...>``. Links with a scheme (``https:``,
``mailto:``) are not followed: nothing here touches the network.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[`~]*[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
INLINE = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(].*?[\"')])?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HTML = re.compile(r"""\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$", re.MULTILINE)
HTML_ANCHOR = re.compile(r"""<a\s[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/ and bench/ (the lab notes and records' pages link too)."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md")), *sorted((ROOT / "bench").rglob("*.md"))]


def prose(text: str) -> str:
    """``text`` without fenced code blocks and code spans (what they hold is shown, not linked)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    """Every link target in the Markdown ``text``, in order."""
    body = prose(text)
    return [m.group(1) for pattern in (INLINE, REFERENCE, HTML) for m in pattern.finditer(body) if m.group(1)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's Markdown text: links reduced to their text, emphasis and code marks dropped,
    lower case, every character but letters, digits, ``_``, ``-`` and spaces dropped, spaces made ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors a link may name on ``page``: its headings' (repeats numbered as GitHub does) and HTML ids."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set()
    seen: dict[str, int] = {}
    for m in HEADING.finditer(text):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found | {m.group(1) for m in HTML_ANCHOR.finditer(text)})


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def broken(page: Path) -> list[str]:
    """The relative links of ``page`` that do not resolve, each with why."""
    out = []
    for target in links(page.read_text(encoding="utf-8")):
        if SCHEME.match(target) or target.startswith("//"):
            continue
        path, _, fragment = target.partition("#")
        path = unquote(path.split("?", 1)[0])
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            out.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and unquote(fragment).lower() not in anchors(file):
            out.append(f"{target}: no heading or anchor #{fragment} in {shown(file)}")
    return out


@pytest.mark.parametrize("page", pages(), ids=shown)
def test_relative_links_resolve(page):
    assert broken(page) == []


def test_the_link_reader_finds_links_and_anchors(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# There\n\n## `transcribe` options\n\n## Usage\n\n## Usage\n", encoding="utf-8")
    page.write_text(
        "# Page\n\nSee [there](there.md#transcribe-options), [again](there.md#usage-1), ![img](missing.png "
        '"title"),\n[gone](gone.md) and [bad anchor](there.md#nowhere) and [self](#page) '
        "[web](https://example.com/x.md).\n\n[ref]: also-gone.md\n\n"
        '<a href="there.md#usage">html</a> `[code](not-a-link.md)`\n\n```\n[fenced](not-a-link-either.md)\n```\n',
        encoding="utf-8",
    )
    assert broken(page) == [
        "missing.png: no such file",
        "gone.md: no such file",
        f"there.md#nowhere: no heading or anchor #nowhere in {shown(tmp_path / 'there.md')}",
        "also-gone.md: no such file",
    ]


def test_docs_hold_no_measurement_records():
    # JSON (and JSON Lines) records and logs; what bench/ writes belongs under bench/, and the docs link there.
    records = sorted(shown(p) for p in DOCS.rglob("*") if p.suffix in (".json", ".jsonl", ".log"))
    assert records == []
