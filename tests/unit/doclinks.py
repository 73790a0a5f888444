"""Reading Markdown pages for the documentation tests: sections, code blocks, links, anchors."""

from __future__ import annotations

import re
from pathlib import Path

from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def strip_code(text: str) -> str:
    """``text`` without fenced code blocks (links and headings in them do not count)."""
    return re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)


def section(text: str, title: str) -> str:
    """The body of the ``## title`` section of ``text``."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    assert match, f"no section {title!r}"
    return match.group(1)


def code_blocks(text: str, language: str) -> list[str]:
    """The contents of the fenced blocks of ``language`` in ``text``."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors mkdocs (and GitHub, for these headings) gives the page's headings."""
    headings = re.findall(r"^#{1,6} (.+?)\s*$", strip_code(page.read_text(encoding="utf-8")),
                          flags=re.M)  # fmt: skip
    return {slugify(h.replace("`", ""), "-") for h in headings}


def links(page: Path) -> list[str]:
    """Every link target of the page (outside code blocks and code spans)."""
    text = re.sub(r"(`+).+?\1", "", strip_code(page.read_text(encoding="utf-8")))
    return [a or b for a, b in LINK.findall(text)]


def broken_links(page: Path) -> list[str]:
    """The page's relative links whose file or anchor does not exist."""
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: not checked offline
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    return broken
