"""Every relative link of the README and of docs/*.md leads somewhere: the file exists and,
when the link names an anchor, the target has a heading of that anchor.

The Markdown is rendered with Python-Markdown (a dependency already), so links inside code
blocks and inline code are not links, as on GitHub; anchors are GitHub's heading slugs.
"""

from __future__ import annotations

import importlib
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import markdown
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _Page(HTMLParser):
    """The link targets and heading texts of one rendered page, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.targets: list[str] = []
        self.headings: list[str] = []
        self._heading: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "a" and attributes.get("href"):
            self.targets.append(attributes["href"])
        elif tag == "img" and attributes.get("src"):
            self.targets.append(attributes["src"])
        elif tag in HEADINGS:
            self._heading = []

    def handle_endtag(self, tag: str) -> None:
        if tag in HEADINGS and self._heading is not None:
            self.headings.append("".join(self._heading))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)


def _read(path: Path) -> _Page:
    page = _Page()
    html = markdown.markdown(path.read_text(encoding="utf-8"), extensions=["tables", "fenced_code"])
    page.feed(html)
    return page


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in _read(path).headings:
        slug = github_slug(heading)
        # GitHub numbers a repeated heading's anchor: slug, slug-1, slug-2…
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in _read(path).targets:
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # an address outside the repository
        linked = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif parts.fragment and linked.suffix == ".md":
            if unquote(parts.fragment) not in anchors(linked):
                broken.append(f"{target}: no heading with that anchor")
        elif parts.fragment:
            broken.append(f"{target}: an anchor into a file that is not Markdown")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path):
    assert broken_links(page) == []


def test_the_slugs_are_githubs():
    assert github_slug("Background jobs: large imports") == "background-jobs-large-imports"
    assert github_slug("The workflow: draft → in review → ready") == (
        "the-workflow-draft--in-review--ready"
    )
    assert github_slug("repro-results/1: the files") == "repro-results1-the-files"
    assert github_slug("export_records") == "export_records"


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path: Path):
    other = tmp_path / "other.md"
    other.write_text("# Other\n\n## A section\n\n## A section\n\n## `a_command` runs\n", "utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n[fine](other.md#a-section), [again](other.md#a-section-1), [here](#page),\n"
        "[code](other.md#a_command-runs),\n"
        "[gone](missing.md), [no anchor](other.md#nowhere), [self](#nowhere-here),\n"
        "[web](https://example.com/x.md#y)\n\n"
        "```\n[in code](missing-too.md)\n```\n\n`[inline](missing-three.md)`\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "other.md#nowhere: no heading with that anchor",
        "#nowhere-here: no heading with that anchor",
    ]


# --- names of the code ----------------------------------------------------------------------

# Files the pages name before they exist: "Adding a record kind" (development.md) walks
# through the files a new kind adds.
NOT_YET_WRITTEN = {"claimsdb/models/components.py"}
CODE_PATH = re.compile(r"(?<![\w/.-])claimsdb/[\w/.-]*[\w/]")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# A dotted name of the package: not a format (claimsdb.case/1), a host (claimsdb.example/…)
# or a file (var/claimsdb.sqlite3).
DOTTED_NAME = re.compile(r"(?<![\w/.-])claimsdb(?:\.[A-Za-z_]\w*)+(?![\w/.-])")


def missing_paths(path: Path, root: Path = ROOT) -> list[str]:
    """The ``claimsdb/…`` files and folders a page names that are not in the tree."""
    named = CODE_PATH.findall(path.read_text(encoding="utf-8"))
    return sorted({p for p in named if p not in NOT_YET_WRITTEN and not (root / p).exists()})


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def unresolved_names(path: Path) -> list[str]:
    """The dotted names (``claimsdb.selectors.scope.case_scope``) a page writes in inline
    code that name no module or no attribute of one. Code blocks are examples: left out."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    names = {name for span in CODE_SPAN.findall(text) for name in DOTTED_NAME.findall(span)}
    return sorted(name for name in names if not _resolves(name))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_file_of_the_package_named_exists(page: Path):
    assert missing_paths(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_dotted_name_of_the_package_imports(page: Path):
    assert unresolved_names(page) == []


def test_a_gone_file_and_a_gone_name_are_found(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "Reads live in `claimsdb/selectors.py` and `claimsdb/selectors/scope.py`, the policy\n"
        "in claimsdb/access.py; formats are `claimsdb.case/1`, the file var/claimsdb.sqlite3.\n"
        "See `claimsdb.selectors.case_scope`, `claimsdb.selectors.scope.case_scope`,\n"
        "`claimsdb.nowhere.thing` and `claimsdb.access`.\n\n"
        "```\nclaimsdb.gone_in_a_block()\n```\n",
        encoding="utf-8",
    )
    assert missing_paths(page) == ["claimsdb/selectors.py"]
    assert unresolved_names(page) == ["claimsdb.nowhere.thing", "claimsdb.selectors.case_scope"]
