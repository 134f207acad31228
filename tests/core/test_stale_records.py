"""Validate records as old as the code they describe (tools/stale_records.py): every committed validate record whose
method's code changed since it was recorded is marked stale in the docs, and the rule finds what it says it finds.

The first test is the repository's own check (git only, no model runs); the others build a small git repository whose
layout is the project's (a capability folder, ``thinklens/calibration``, ``thinklens/engine``) and hold the rule
against what was changed there by hand.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tools.readme_results import find_blocks
from tools.stale_records import MARKS, ROOT, Git, code_differs, method_files, record_state, record_states

FIX = ("python -m tools.stale_records --write && python results/collect.py validation && "
       "python -m tools.readme_results --write")


def _shallow() -> bool:
    out = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() == "true"


def _block(page: str, summary: str) -> str:
    (block,) = [b.text for b in find_blocks((ROOT / page).read_text(encoding="utf-8")) if b.summary == summary]
    return block


def test_every_stale_validate_record_is_marked_stale_in_the_docs():
    if _shallow():
        pytest.skip("a shallow clone: the records' commits may be missing (git fetch --unshallow to check them)")
    states = record_states()
    assert len(states) >= 10, [s.record for s in states]  # the committed validate records were found
    marked = {m["record"]: m["mark"] for m in json.loads(MARKS.read_text())["values"]["records"]}
    stale = {s.record: s.why for s in states if s.stale}
    assert marked == stale, (f"the docs' marks ({MARKS.relative_to(ROOT)}) are not the records' state at HEAD: "
                             f"marked but not so {sorted(set(marked.items()) - set(stale.items()))}, stale but not so "
                             f"marked {sorted(set(stale.items()) - set(marked.items()))}; run `{FIX}`")
    # what a reader sees: the list in docs/validation.md, and each row of the validation table in docs/results.md
    listed = _block("docs/validation.md", "results/stale_records.json")
    for record, why in stale.items():
        assert f"- `{record}`: {why}\n" in listed, f"docs/validation.md does not mark {record} stale; run `{FIX}`"
    rows = [line for line in _block("docs/results.md", "results/validation.json").splitlines() if line.startswith("| ")][2:]
    assert rows, "docs/results.md's validation table has no rows"
    by_name = {s.record: s for s in states}
    for line in rows:
        m = re.search(r"\| `(validate-[\w-]+)` ?([^|]*)\|$", line)
        assert m, f"a validation table row names no record: {line}"
        state = by_name[m.group(1)]
        want = f"stale since {state.since}" if state.stale else ""
        assert m.group(2).strip() == want, f"docs/results.md: {line!r} should say {want!r}; run `{FIX}`"


# ---------------------------------------------------------------------------------------------- the rule, by hand


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


SETTINGS = '''"""Toy settings."""
from thinklens.calibration.controls import Check


def planted(ctx):
    from thinklens.analyses.helper import gap  # a function-level import counts
    from thinklens.analyses import thing  # a lazy export: its module, not the package's table
    from thinklens.engine.model import HookedModel  # the shared core: left out
    from thinklens.steering.other import x  # another capability: not this method's
    ctx.run_job("toy", "sub")  # a job run by name is a root of its own
    return Check("gap", gap(), (0.0, 1.0), "recovered")
'''
TREE = {
    "thinklens/__init__.py": "", "thinklens/calibration/__init__.py": "",
    "thinklens/calibration/controls.py": "from thinklens.calibration.stats import wilson\nclass Check: pass\n",
    "thinklens/calibration/stats.py": "def wilson():\n    return 0\n",
    "thinklens/calibration/validate.py": "def run():\n    pass\n",  # the harness: imported by no setting
    "thinklens/engine/__init__.py": "", "thinklens/engine/model.py": "class HookedModel: pass\n",
    "analyses/__init__.py": '_EXPORTS = {"thing": "thinklens.analyses.things", "other": "thinklens.analyses.unused"}\n',
    "analyses/toy_validation.py": SETTINGS,
    "analyses/helper.py": "from .deep import k\ndef gap():\n    return 1.0\n",
    "analyses/deep.py": "k = 1\n", "analyses/things.py": "thing = 2\n", "analyses/unused.py": "other = 3\n",
    "analyses/jobs/__init__.py": "", "analyses/jobs/toy.py": "from thinklens.analyses.job_lib import f\n",
    "analyses/job_lib.py": "def f():\n    return 1\n",
    "steering/__init__.py": "", "steering/other.py": "x = 1\n",
}
ROOTS = {"toy/planted": ("thinklens.analyses.toy_validation",)}
JOBS = {"toy": "analyses/jobs/toy.py"}


def _record(records: Path, name: str, commit: str, dirty: bool, settings: tuple[str, ...] = ("planted",)) -> None:
    (records / name / "results").mkdir(parents=True)
    (records / name / "meta.json").write_text(json.dumps({"job": "validate", "code": {"git_commit": commit, "git_dirty": dirty}}))
    rows = [{"method": "toy", "setting": s} for s in settings]
    (records / name / "results" / "validate.json").write_text(json.dumps({"rows": rows}))


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo, _commit(repo, TREE, "the toy method")


def test_the_method_files_are_the_closure_within_its_capability_and_calibration(repo):
    repo, _ = repo
    files = method_files(["toy/planted"], git=Git(repo), roots=ROOTS, jobs=JOBS)
    # mutants killed: following the core or another capability (engine/model.py, steering/other.py), keeping the
    # package's lazy table or all of its targets (analyses/__init__.py, unused.py), dropping function-level imports
    # (helper.py), relative ones (deep.py) or jobs run by name (jobs/toy.py and its job_lib.py)
    assert files == ("analyses/deep.py", "analyses/helper.py", "analyses/job_lib.py", "analyses/jobs/toy.py",
                     "analyses/things.py", "analyses/toy_validation.py", "thinklens/calibration/controls.py",
                     "thinklens/calibration/stats.py")


def test_a_record_goes_stale_when_its_method_code_changes_and_not_for_its_words(repo, tmp_path):
    repo, first = repo
    records = tmp_path / "records"
    _record(records, "clean", first, False)
    _record(records, "dirty", first, True)
    _record(records, "shallow", "0" * 40, False)
    _record(records, "retired", first, False, ("planted", "gone"))
    state = lambda name: record_state(name, records=records, git=Git(repo), roots=ROOTS, jobs=JOBS)  # noqa: E731
    assert not state("clean").stale and state("clean").why == f"fresh since {first[:7]}"
    # a dirty tree's record is stale though no file changed; a commit this clone lacks says so, without a crash
    assert state("dirty").stale and "dirty tree" in state("dirty").why
    assert state("shallow").stale and not state("shallow").known and "not in this clone's history" in state("shallow").why
    assert state("retired").unregistered == ("toy/gone",) and not state("retired").stale

    # words only: a docstring, a comment, the harness and a file outside the method change
    _commit(repo, {"analyses/helper.py": 'from .deep import k\ndef gap():\n    """Now documented."""\n    return 1.0  # why\n',
                   "thinklens/calibration/validate.py": "def run():\n    return 1\n",
                   "thinklens/engine/model.py": "class HookedModel:\n    x = 1\n", "analyses/unused.py": "other = 4\n"},
            "words, the harness, the core")
    assert not state("clean").stale, state("clean").changed
    # the method's code: a file the settings reach through a relative import, and the statistics module
    _commit(repo, {"analyses/deep.py": "k = 2\n", "thinklens/calibration/stats.py": "def wilson():\n    return 1\n"}, "code")
    assert state("clean").changed == ("analyses/deep.py", "thinklens/calibration/stats.py")
    assert state("clean").why == f"stale since {first[:7]}: analyses/deep.py, thinklens/calibration/stats.py"


def test_code_differs_reads_programs_not_text():
    assert not code_differs('X = 1\n"""X\'s docstring."""\n', "X = 1  # a comment\n")
    assert code_differs("X = 1\n", "X = 2\n")
    assert code_differs(None, "X = 1\n") and not code_differs(None, None)  # a new file differs
    assert code_differs("def (:\n", "def (:  \n")  # text that does not parse: compared as text


def test_the_modules_examples_run():
    import doctest

    import tools.stale_records

    assert doctest.testmod(tools.stale_records).failed == 0
