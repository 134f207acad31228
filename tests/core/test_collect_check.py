"""``python results/collect.py --check``: every summary rebuilds byte-identically from the tracked files alone (each
has its record in the repository), and a hand edit is noticed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLLECT = ROOT / "results" / "collect.py"


def run_check(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def collector_names() -> list[str]:
    """Every ``@collector`` of collect.py and its capability modules (results/*_collectors.py)."""
    files = [COLLECT, *sorted(COLLECT.parent.glob("*_collectors.py"))]
    return [n for f in files for n in re.findall(r'^@collector\("([^"]+)"\)', f.read_text(), flags=re.M)]


def test_check_rebuilds_every_committed_summary_and_names_the_others():
    out = run_check(str(COLLECT), "--check")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    status = {m.group(2): m.group(1) for m in (re.match(r"(identical|no record|differs|failed|read outside the "
                                                         r"repository): results/(\w+)\.json", x) for x in lines) if m}
    names = collector_names()
    assert sorted(status) == sorted(names), f"one line per summary expected, got {lines}"
    assert set(status.values()) == {"identical"}, lines  # every summary has its record in the repository
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


def test_a_record_of_an_mi_peaks_run_keeps_its_state_norms_and_gives_the_same_quartiles(tmp_path, monkeypatch):
    """keep_record drops the trajectories (MBs of tokens) but keeps each one's state norms, and mi_model_values reads
    the same quartiles from the record as from the run folder (numpy over the flattened norms as oracle)."""
    sys.path.insert(0, str(ROOT / "results"))
    try:
        import collect
    finally:
        sys.path.remove(str(ROOT / "results"))
    run = tmp_path / "runs" / "mi-peaks" / "x"
    norms = {"tiny-a": [[1.0, 2.0, 9.0], [4.0]], "tiny-b": [[0.5, 0.25]]}
    for model, trajs in norms.items():
        (run / "trajectories" / model).mkdir(parents=True)
        for i, n in enumerate(trajs):
            (run / "trajectories" / model / f"{i:05d}.json").write_text(json.dumps({"norms": n, "tokens": ["t"] * len(n)}))
    (run / "results").mkdir()
    (run / "config.json").write_text("{}")
    (run / "results" / "mi_models.json").write_text("{}")
    monkeypatch.setattr(collect, "RECORDS", tmp_path / "records")
    dest = collect.keep_record(run, "mi-x")
    assert not (dest / "trajectories").exists()
    assert json.loads((dest / collect.TRAJECTORY_NORMS).read_text()) == norms
    model = {"key": "tiny-a", "accuracy": 1, "mean_tokens": 2, "mean_mi": 0, "mean_max_mi": 0, "peak_to_median": 1,
             "peak_fraction": 0, "controls": [], "small_scale": {}}
    import numpy as np
    flat = [1.0, 2.0, 9.0, 4.0]
    want = {"q25": float(np.percentile(flat, 25)), "median": 3.0, "q75": float(np.percentile(flat, 75))}
    assert collect.mi_model_values(run, model)["state_norm"] == want
    assert collect.mi_model_values(dest, model)["state_norm"] == want


def test_a_record_of_a_training_run_keeps_its_model_card_and_weight_checksum_not_its_weights(tmp_path, monkeypatch):
    """A model folder inside a run: its latent.json and config.json are kept, its weights are not, and weights.json holds
    their SHA-256 (hashlib over the bytes as oracle)."""
    import hashlib

    sys.path.insert(0, str(ROOT / "results"))
    try:
        import collect
    finally:
        sys.path.remove(str(ROOT / "results"))
    run = tmp_path / "runs" / "sft" / "x"
    (run / "model").mkdir(parents=True)
    (run / "checkpoint").mkdir()
    (run / "config.json").write_text('{"train_steps": 3}')
    (run / "model" / "config.json").write_text('{"model_type": "llama"}')
    (run / "model" / "latent.json").write_text('{"method": "sft"}')
    blob = bytes(range(256)) * 9
    (run / "model" / "model.safetensors").write_bytes(blob)
    (run / "checkpoint" / "state.json").write_text("{}")
    monkeypatch.setattr(collect, "RECORDS", tmp_path / "records")
    dest = collect.keep_record(run, "sft-x")
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == [
        "config.json", "model/config.json", "model/latent.json", "model/weights.json"]
    assert json.loads((dest / "model" / "weights.json").read_text()) == {
        "model.safetensors": {"sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob)}}


def test_a_package_folder_listed_by_import_is_not_an_input_but_a_plain_folder_is(tmp_path):
    """In a fresh clone a package has no __pycache__ yet when the import system lists it: its __init__.py marks it."""
    code = ("import os, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import collect; "
            "seen = collect._watch_reads(Path(sys.argv[2])); os.listdir(sys.argv[3]); os.listdir(sys.argv[4]); print(seen)")
    package, plain = tmp_path / "outside" / "pkg", tmp_path / "outside" / "plain"
    package.mkdir(parents=True)
    plain.mkdir()
    (package / "__init__.py").write_text("")
    out = run_check("-c", code, str(ROOT / "results"), str(tmp_path / "tree"), str(package), str(plain))
    assert out.returncode == 0, out.stderr
    assert str(plain) in out.stdout and str(package) + "'" not in out.stdout


def _collect_module():
    import importlib.util

    if str(COLLECT.parent) not in sys.path:  # collect.py imports its sibling modules as a script does
        sys.path.insert(0, str(COLLECT.parent))
    spec = importlib.util.spec_from_file_location("collect_for_test", COLLECT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_validation_rows_take_each_setting_from_exactly_one_record(tmp_path, monkeypatch):
    # the table takes from each record only the settings it is listed for; a superseded row in an old record (here
    # a/old) is left out, and a listed setting missing from its record, one listed twice or a registered setting in no
    # record is an error. Mutants killed: every row of every record taken (a/old and the renamed setting both shown),
    # first-record-wins without a check (a setting silently taken from the wrong record)
    import pytest

    from thinklens.calibration import controls
    from thinklens.calibration.controls import Check, Setting

    collect = _collect_module()
    settings = [Setting("a", n, "no-effect", lambda ctx: Check("s", 0.0, (0.0, 0.0), "no-effect")) for n in ("null", "new")]
    monkeypatch.setattr(controls, "all_settings", lambda: settings)
    import sys

    monkeypatch.setattr(sys.modules[collect.validation_rows.__module__], "RECORDS", tmp_path)  # where it reads them

    def record(name: str, *names: str) -> None:
        rows = [dict(method="a", setting=n, expected="no-effect", statistic="s", value=0.0, ci=[0, 0], verdict="no-effect",
                     ok=True, n=1, target="t", seconds=1.0) for n in names]
        (tmp_path / name / "results").mkdir(parents=True)
        (tmp_path / name / "results" / "validate.json").write_text(json.dumps({"rows": rows}))

    record("r1", "old", "null")
    record("r2", "new")
    rows = collect.validation_rows({"r1": "a/null", "r2": "a/new"})
    assert [r["setting"] for r in rows] == ["null", "new"]
    with pytest.raises(ValueError, match="r2 has no row for a/null"):
        collect.validation_rows({"r1": "a/null", "r2": "a/null,a/new"})
    with pytest.raises(ValueError, match="no validation record holds"):
        collect.validation_rows({"r1": "a/null"})
    record("r3", "null", "new")
    with pytest.raises(ValueError, match="taken from both"):
        collect.validation_rows({"r1": "a/null", "r3": "a"})
