"""The docs stay true: every ``>>>`` example in docs/*.md runs (doctest, one namespace per
page), and every relative link of the README and the docs names a file that exists."""

from __future__ import annotations

import doctest
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_examples_of_a_page_run(page: Path) -> None:
    environ = dict(os.environ)  # a page may set a TUI_AGENT_* variable to show its effect
    try:
        result = doctest.testfile(str(page), module_relative=False, report=True,
                                  optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    finally:
        os.environ.clear()
        os.environ.update(environ)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES],
                         ids=["README.md", *[page.name for page in PAGES]])
def test_relative_links_name_files_that_exist(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in t]
    missing = [t for t in targets if not (page.parent / t).exists()]
    assert missing == []


def test_the_docs_have_examples_and_the_readme_links_them() -> None:
    examples = sum(page.read_text(encoding="utf-8").count(">>> ") for page in PAGES)
    assert examples >= 20
    assert "docs/README.md" in (ROOT / "README.md").read_text(encoding="utf-8")
