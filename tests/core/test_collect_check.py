"""``python results/collect.py --check``: every summary whose inputs are committed rebuilds byte-identically from the
tracked files alone, the others are named with the command that rebuilds them, and a hand edit is noticed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECT = ROOT / "results" / "collect.py"
#: Summaries whose records are committed (results/records/, data/zoo/*/zoo.json, data/saes/): each must rebuild.
COMMITTED = ("validation", "demo_findings", "organisms", "demo", "sae")


def run_check(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def collector_names() -> list[str]:
    return re.findall(r'^@collector\("([^"]+)"\)', COLLECT.read_text(), flags=re.M)


def test_check_rebuilds_every_committed_summary_and_names_the_others():
    out = run_check(str(COLLECT), "--check")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    status = {m.group(2): m.group(1) for m in (re.match(r"(identical|no record|differs|failed|read outside the "
                                                         r"repository): results/(\w+)\.json", x) for x in lines) if m}
    names = collector_names()
    assert sorted(status) == sorted(names), f"one line per summary expected, got {lines}"
    assert {n for n, s in status.items() if s == "identical"} >= set(COMMITTED), lines
    assert set(status.values()) <= {"identical", "no record"}, lines
    for line in lines:
        if line.startswith("no record: "):
            assert "(rebuild: " in line and "python results/collect.py " in line, line
    identical = sum(s == "identical" for s in status.values())
    assert lines[-1] == f"summaries_identical={identical}/{len(names)}"
    # the README's records block (results/records.json, `--check --write`) says what the check says
    committed = json.loads((ROOT / "results" / "records.json").read_text())["values"]
    assert {Path(s["summary"]).stem: s["status"] for s in committed["summaries"]} == status
    assert committed["identical"] == identical


def test_a_hand_edit_to_a_summary_is_noticed(tmp_path):
    sys.path.insert(0, str(ROOT / "results"))
    try:
        import collect
    finally:
        sys.path.remove(str(ROOT / "results"))
    collect.tracked_copy(tmp_path)
    summary = tmp_path / "results" / "validation.json"
    text = summary.read_text()
    m = re.search(r'"validated": (\d+)', text)
    summary.write_text(text[:m.start(1)] + str(int(m.group(1)) + 1) + text[m.end(1):])
    out = run_check(str(tmp_path / "results" / "collect.py"), "--check-here", cwd=tmp_path)
    assert out.returncode == 1
    assert "differs: results/validation.json" in out.stdout
    assert "identical: results/organisms.json" in out.stdout


def test_a_read_outside_the_tree_is_caught(tmp_path):
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import collect; "
            "seen = collect._watch_reads(Path(sys.argv[2])); (Path(sys.argv[1]) / 'collect.py').read_text(); "
            "Path(sys.argv[3]).read_text(); print(seen)")
    inside = tmp_path / "x.json"
    inside.write_text("{}")
    out = run_check("-c", code, str(ROOT / "results"), str(tmp_path), str(inside))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # code and the tree's own files are not flagged
    out = run_check("-c", code, str(ROOT / "results"), str(tmp_path), str(ROOT / "README.md"))
    assert str(ROOT / "README.md") in out.stdout


def test_collect_names_no_path_of_a_development_machine():
    text = COLLECT.read_text()
    assert not re.findall(r"[\"'](?:/work|/tmp|/home|/Users|/root)\b", text)
