"""``thinklens runs`` and ``thinklens runs show``: the table of runs (kind, id, status, headline), one run in
full, exit 2 with one line on a bad name, and the refused-resume message naming the keys that differ."""

from __future__ import annotations

import json
import re

import pytest

from thinklens.calibration.findings import accuracy_finding, finding_sentence, findings_doc
from thinklens.cli import main
from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder, config_differences


@pytest.fixture()
def root(tmp_path):
    """Three runs: a probe with findings, an eval with a plain summary, a running one; plus a broken folder."""
    effect = accuracy_finding("the probe reads the value", 45, 50, control="majority guess", control_value=0.5)
    null = accuracy_finding("the probe beats chance late", 26, 50, control="majority guess", control_value=0.5)
    assert (effect.verdict, null.verdict) == ("effect", "no effect")  # the oracle below relies on both verdicts
    RunFolder.create("probe", {"model": "tiny-think", "n": 50}, root=tmp_path, run_id="p1").finish(
        {"best_site": "resid_post.2", "findings": findings_doc([effect, null])})
    RunFolder.create("eval", {"model": "tiny-cot", "n": 2}, root=tmp_path, run_id="e1").finish({"accuracy": 0.5})
    RunFolder.create("eval", {"model": "tiny-cot", "n": 3}, root=tmp_path, run_id="e2")  # still running
    (tmp_path / "eval" / "broken").mkdir()  # no config.json
    return tmp_path, effect


def _rows(out: str) -> dict[str, list[str]]:
    lines = out.strip().splitlines()
    assert lines[0].split() == ["kind", "id", "status", "headline"]
    return {"/".join(line.split()[:2]): line.split(None, 3)[2:] for line in lines[1:]}


def test_runs_lists_kind_id_status_headline(root, capsys):
    tmp, effect = root
    assert main(["runs", "--runs", str(tmp)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert sorted(rows) == ["eval/broken", "eval/e1", "eval/e2", "probe/p1"]
    assert rows["eval/e1"][0] == "done" and rows["eval/e2"][0] == "running" and rows["eval/broken"][0] == "broken"
    # the headline is the run's first finding in words (the same sentence the CLI's closing lines print)
    assert rows["probe/p1"][1].startswith(finding_sentence(effect.to_dict()))
    assert "0.5" in rows["eval/e1"][1]  # a summary without findings: its numbers
    # --kind keeps one kind
    assert main(["runs", "--runs", str(tmp), "--kind", "probe"]) == 0
    assert sorted(_rows(capsys.readouterr().out)) == ["probe/p1"]


def test_runs_show_prints_config_status_findings(root, capsys):
    tmp, effect = root
    for ref in ("probe/p1", "p1", str(tmp / "probe" / "p1")):  # by KIND/ID, by a unique id, by its path
        assert main(["runs", "show", ref, "--runs", str(tmp)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[0] == f"run: {tmp / 'probe' / 'p1'}" and "kind: probe" in out and "status: done" in out
        assert "  model: tiny-think" in out and "  n: 50" in out
        assert f"  [effect] {finding_sentence(effect.to_dict())}" in out
        assert any(line.startswith("  [no effect] ") for line in out)
        assert "  best_site: resid_post.2" in out


@pytest.mark.parametrize("argv, needle", [
    (["runs", "show", "probe/nope"], "bad run: received 'probe/nope'"),
    (["runs", "show", "prob/p1"], "did you mean 'probe/p1'?"),
    (["runs", "--kind", "prob"], "did you mean 'probe'?"),
])
def test_bad_run_names_exit_2_with_one_line(root, capsys, argv, needle):
    tmp, _ = root
    assert main([*argv, "--runs", str(tmp)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and needle in err


def test_missing_runs_root_and_ambiguous_id_exit_2(tmp_path, capsys):
    assert main(["runs", "--runs", str(tmp_path)]) == 0  # an empty root: one line saying so, exit 0
    assert capsys.readouterr().out.startswith(f"no runs under {tmp_path} yet")
    assert main(["runs", "--runs", str(tmp_path / "none")]) == 2
    assert "bad runs folder" in capsys.readouterr().err
    RunFolder.create("a", {"n": 1}, root=tmp_path, run_id="same")
    RunFolder.create("b", {"n": 1}, root=tmp_path, run_id="same")
    assert main(["runs", "show", "same", "--runs", str(tmp_path)]) == 2
    assert "a/same, b/same" in capsys.readouterr().err


def test_refused_resume_names_the_differing_keys(tmp_path):
    RunFolder.create("eval", {"model": "tiny-cot", "n": 2, "opt": {"lr": 0.1, "steps": 5}}, root=tmp_path, run_id="r")
    with pytest.raises(ThinklensError) as e:
        RunFolder.create("eval", {"model": "tiny-cot", "n": 3, "opt": {"lr": 0.1, "steps": 6}, "seed": 1},
                         root=tmp_path, run_id="r")
    msg = str(e.value)
    assert "same config to resume" in msg and "pass a new run_id= for this config" in msg  # Python's terms, not --run-id
    assert f"config_file='{tmp_path / 'eval' / 'r' / 'config.json'}'" in msg  # resuming: the run's own config
    assert "n (2 -> 3)" in msg and "opt.steps (5 -> 6)" in msg and "seed (absent -> 1)" in msg
    assert "model" not in msg.split("differs in")[1] and "lr" not in msg  # equal keys are not named
    # the same config but resume off: no keys differ, and the message says why it was refused
    with pytest.raises(ThinklensError, match="resuming is off"):
        RunFolder.create("eval", {"model": "tiny-cot", "n": 2, "opt": {"lr": 0.1, "steps": 5}},
                         root=tmp_path, run_id="r", resume=False)


def test_config_differences_against_a_flat_oracle():
    old = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "e": None}
    new = {"a": 1, "b": {"c": [1, 3], "d": "x"}, "f": True}
    # oracle: flatten both to dotted keys and compare key by key
    def flat(d, p=""):
        return {k2: v2 for k, v in d.items() for k2, v2 in (flat(v, f"{p}{k}.").items() if isinstance(v, dict)
                                                            else {f"{p}{k}": v}.items())}
    fo, fn = flat(old), flat(new)
    differing = sorted(k for k in set(fo) | set(fn) if fo.get(k, "<absent>") != fn.get(k, "<absent>"))
    got = config_differences(old, new)
    assert re.findall(r"(?:^|, )([\w.]+) \(", got) == differing == ["b.c", "e", "f"]
    assert "b.c ([1, 2] -> [1, 3])" in got and "e (null -> absent)" in got
    many = config_differences({f"k{i}": i for i in range(12)}, {f"k{i}": -i - 1 for i in range(12)})
    assert many.endswith(", and 4 more") and json.dumps(many).count("->") == 8


def test_a_failed_run_shows_its_refusal_not_empty_results(tmp_path, capsys):
    """Regression: a refused LYNX run (meta.json: status failed, its error; no summary) was listed as "no δ within its
    bound; 0/0 δ valid; probe AUROC ?" (the job's headline read from an empty summary), a refused reasoning-vector run
    as "|v| ?, accuracy ? ...". The listing (Home's headline, app/dashboard.py, in a checkout) gives the refusal."""
    error = "bad probe training data: received 'class counts [10, 0]'; expected 2 events of each class; fix: label more"
    run = RunFolder.create("lynx", {"model": "gemma-3-270m"}, root=tmp_path, run_id="refused")
    run.write_meta(status="failed", error=error)
    assert main(["runs", "--runs", str(tmp_path)]) == 0
    assert _rows(capsys.readouterr().out)["lynx/refused"] == ["failed", f"failed: {error}"]
    from thinklens.runs.folders import discover_runs

    (entry,) = discover_runs(tmp_path)
    assert entry.failure == error
