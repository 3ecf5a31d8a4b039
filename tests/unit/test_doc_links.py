"""Every link between the project's own pages leads somewhere: a relative
Markdown link in README.md, docs/, tests/README.md or benchmarks/ names a file
of the tree, and its ``#anchor`` (if any) a heading of that file, as GitHub
makes anchors from headings. (A renamed page left a dead link behind once.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "tests" / "README.md", *(ROOT / "docs").glob("*.md"),
                *(ROOT / "benchmarks").glob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of ``page``'s headings: lower case, punctuation dropped, spaces to '-',
    a repeated one numbered."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]  # http:, mailto: ...


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_pages_resolves(page):
    dead = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            dead.append(f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            dead.append(f"{target}: no heading makes #{anchor}")
    assert not dead, dead


def test_a_dead_link_is_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Top\n\nSee [gone](gone.md), [here](#top) and [there](#nowhere).\n", encoding="utf-8")
    assert links(page) == ["gone.md", "#top", "#nowhere"]
    assert anchors(page) == {"top"}
