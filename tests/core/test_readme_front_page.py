"""README.md is a front page: at most 200 lines, the two set-up commands, a short tour, the capability table with
links into docs/, one figure; every link of README.md and docs/*.md resolves (files and #anchors); the history of
the project stays out of both; the bring-your-own-model checklist names the import-traces schema the code reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces as ``-``.

    Example:
        >>> slug("MI peaks and thinking tokens (`analyses/mi`)"), slug("The real path on tiny-r1")
        ('mi-peaks-and-thinking-tokens-analysesmi', 'the-real-path-on-tiny-r1')
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a markdown page's headings (outside code), a repeated one also as ``name-1``, ``name-2``."""
    seen: dict[str, int] = {}
    out = set()
    for m in re.finditer(r"^#{1,6} (.+)$", _FENCE.sub("", text), re.M):
        s = slug(m.group(1))
        out.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return out


def links(text: str) -> list[tuple[bool, str]]:
    """(is an image, target) of every markdown link outside fenced code."""
    return [(m.group(1) == "!", m.group(3)) for m in _LINK.finditer(_FENCE.sub("", text))]


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file, or whose heading anchor, does not exist."""
    out = []
    for _, target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            out.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            out.append(f"{target}: {dest.name} has no heading with anchor #{anchor}")
    return out


def test_the_link_checker_finds_a_broken_file_and_a_broken_anchor(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Two words\n")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/a.md#two-words) [top](#intro) [gone](docs/b.md) [bad](docs/a.md#three)\n"
                    "```\n[in code](docs/none.md)\n```\n# Intro\n")
    assert broken_links(page) == ["docs/b.md: no file " + str(tmp_path / "docs" / "b.md"),
                                  "docs/a.md#three: a.md has no heading with anchor #three"]


def test_the_readme_has_at_most_200_lines():
    n = len(README.splitlines())
    assert n <= 200, f"README.md has {n} lines: move reference material to docs/<capability>.md"


def test_every_docs_link_of_the_readme_resolves():
    targets = [t for _, t in links(README)]
    docs = {t.split("#")[0] for t in targets if t.startswith("docs/") and t.split("#")[0].endswith(".md")}
    # the capability table links a page per capability, the results page and the checklist
    assert {"docs/results.md", "docs/bring-your-own-model.md", "docs/models.md", "docs/lynx.md"} <= docs, sorted(docs)
    assert len(docs) >= 10, sorted(docs)
    assert not broken_links(ROOT / "README.md")


@pytest.mark.parametrize("page", PAGES[1:], ids=lambda p: p.name)
def test_every_link_of_the_docs_resolves(page):
    assert not broken_links(page)


def test_every_docs_page_is_reachable_from_the_readme():
    """A page that no link leads to is lost: every docs/*.md is linked from README.md or from a page it links."""
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        for _, target in links(page.read_text(encoding="utf-8")):
            dest = (page.parent / target.partition("#")[0]).resolve()
            if dest.suffix == ".md" and dest.is_file() and dest not in reached:
                reached.add(dest)
                todo.append(dest)
    assert not [p.name for p in PAGES[1:] if p.resolve() not in reached]


def test_the_readme_sets_up_with_exactly_make_demo_and_make_test():
    section = README.split("## Set up and run", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_the_tour_points_at_the_notebooks_and_the_checklist():
    tour = README.split("## A short tour", 1)[1].split("\n## ", 1)[0]
    notebooks = [line for line in tour.splitlines() if line.startswith("- **Notebooks**")]
    assert notebooks and "(notebooks/)" in notebooks[0]
    assert "(docs/bring-your-own-model.md)" in tour
    assert "```python" in tour and "HookedModel.load(" in tour and "run_job(" in tour


def test_the_capability_table_names_every_job_and_links_its_docs():
    """The jobs column is the registry's (each job names its row, ``Job.capability``; ``python -m tools.job_table
    --write`` writes it): every job is named, none by hand."""
    from thinklens.runs.jobs import job_names
    from tools.job_table import render, table_lines

    assert README == render(README), "the README's capability table is out of date: python -m tools.job_table --write"
    table = [README.splitlines()[i] for i in table_lines(README)]
    named = {m for line in table for m in re.findall(r"`([a-z0-9-]+)`", line.split("|")[2])}
    missing = sorted(set(job_names()) - named)
    assert not missing, f"jobs the README's capability table does not name (Job(capability=...)): {missing}"
    assert all("(docs/" in line.split("|")[4] for line in table), "every capability row links its docs page"


def test_the_readme_shows_one_existing_figure():
    images = [t for is_image, t in links(README) if is_image]
    assert len(images) == 1 and re.fullmatch(r"docs/screenshots/\w+\.png", images[0]), images
    assert (ROOT / images[0]).is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_history_in_the_pages(page):
    """The docs say what the code does and measures now; what an older commit did belongs in git log."""
    text = page.read_text(encoding="utf-8")
    found = re.findall(r"(?i)[^.\n]*(?:before this fix|before the fix|at commit [0-9a-f]{7}|an earlier (?:run|audit|claim)"
                       r"|the earlier claim)[^.\n]*", text)
    assert not found, found


def test_the_checklist_covers_the_model_and_the_import_traces_schema():
    from thinklens.data.import_traces import FIELD_NAMES

    text = (ROOT / "docs" / "bring-your-own-model.md").read_text(encoding="utf-8")
    for topic in ("Chat template", "eos", "pad", "<think>", "Digits per token", "import-traces"):
        assert topic in text, topic
    table = text.split("the import-traces JSONL", 1)[1]
    for ours, names in FIELD_NAMES.items():  # every field the reader accepts, under every name it reads
        row = next((line for line in table.splitlines() if line.startswith(f"| `{ours}` |")), None)
        assert row is not None, f"the schema table has no row for {ours}"
        assert all(f"`{n}`" in row for n in names), (ours, names, row)
