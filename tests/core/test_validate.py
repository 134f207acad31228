"""``thinklens run validate``: its lines, its headline, its resume, a crashing setting, bad input.

Each method's own settings are tested next to the method (tests/<package>/test_*validation*.py); the full
run of every setting is the ``slow`` test here."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from thinklens.calibration import controls
from thinklens.calibration.controls import Check, Setting, select_settings
from thinklens.errors import ThinklensError
from thinklens.runs.jobs import run_job

LINE = re.compile(r"^validate (\S+) (\S+) kind=(planted|null|benchmark) (\S+)=(\S+) \[(\S+), (\S+)\] "
                  r"verdict=(recovered|no-effect|failed)$")


def _toy_settings(calls):
    def planted(ctx):
        calls.append("planted")
        return Check("gap", 0.5, (0.4, 0.6), "recovered", n=30, target="gap > 0")

    def null(ctx):
        calls.append("null")
        return Check("gap", 0.0, (-0.1, 0.1), "recovered", n=30)  # a method that sees an effect on its null

    def crash(ctx):
        calls.append("crash")
        raise RuntimeError("boom")

    return [Setting("toy", "planted", "recovered", planted), Setting("toy", "null", "no-effect", null),
            Setting("toy", "crash", "recovered", crash)]


def test_rows_headline_resume_and_failures(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(controls, "all_settings", lambda: _toy_settings(calls))
    doc = run_job("validate", methods=("toy",), out=tmp_path / "v", progress=False)
    assert calls == ["planted", "null", "crash"]
    assert (doc["validated"], doc["n_settings"]) == (1, 3)
    assert doc["failed"] == ["toy/null", "toy/crash"]
    crash = doc["rows"][2]
    assert crash["verdict"] == "failed" and "RuntimeError: boom" in crash["details"]["error"]
    for row in doc["rows"]:
        assert LINE.match(row["line"]), row["line"]
    from thinklens.calibration.validate import report

    assert report(doc.value).splitlines()[-1] == "validated=1/3"
    # resumed with the same config: the settings that ran are not run again and the same rows come back; the one that
    # crashed is tried again (a crash, say an import broken while the run was going, is not a result to keep)
    again = run_job("validate", methods=("toy",), out=tmp_path / "v", progress=False)
    assert calls == ["planted", "null", "crash", "crash"]
    assert [{**r, "seconds": 0} for r in again["rows"]] == [{**r, "seconds": 0} for r in doc["rows"]]
    meta = json.loads((tmp_path / "v" / "meta.json").read_text())
    assert meta["status"] == "done" and meta["summary"]["validated"] == 1


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ThinklensError, match="did you mean 'findings'"):
        select_settings(("findngs",))
    with pytest.raises(ThinklensError, match="did you mean 'findings/null'"):
        select_settings(("findings/nul",))


def test_one_setting_by_method_and_name():
    picked = select_settings(("findings/planted", "lynx"))
    assert {(s.method, s.name) for s in picked} == {("findings", "planted")} | {
        ("lynx", s.name) for s in select_settings(("lynx",))}


def test_cli_quick_findings_lines_and_exit_codes(tmp_path):
    cmd = [sys.executable, "-m", "thinklens.cli", "run", "validate", "--quick", "--methods", "findings",
           "--out", str(tmp_path / "q")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("validate ")]
    assert [LINE.match(ln).group(1, 2, 8) for ln in lines] == [("findings", "planted", "recovered"),
                                                               ("findings", "null", "no-effect")]
    assert out.stdout.strip().splitlines()[-1] == "validated=2/2"  # the headline stays last, after the findings
    findings = out.stdout.split("findings:\n")[1].splitlines()[:-1]  # one per setting, the same verdicts
    assert findings[0].startswith("  [effect] findings recovers its planted effect (planted): power ")
    assert findings[1].startswith("  [no effect] not shown (no effect): findings finds an effect on its null setting")
    assert len(findings) == 2 and " nan" not in out.stdout
    bad = subprocess.run(cmd[:-4] + ["--methods", "nope"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "validate method" in bad.stderr


def test_every_registered_setting_has_a_planted_and_a_null():
    by_method: dict[str, set[str]] = {}
    for s in select_settings():
        by_method.setdefault(s.method, set()).add(s.expected)
    assert by_method, "no settings registered (reinstall: pip install -e .)"
    for method, expected in by_method.items():
        assert expected == {"recovered", "no-effect"}, f"{method} lacks a planted or a null setting"


@pytest.mark.slow
def test_full_validation_table(tmp_path):
    """The README's validation table: every setting, full size, each verdict the expected one."""
    doc = run_job("validate", out=tmp_path / "full", progress=False, threads=1)
    assert doc["failed"] == [], doc["failed"]


def test_model_runs_only_the_on_model_settings_on_that_model(tmp_path, monkeypatch, family_model):
    """``--model M`` runs the settings that need only a model (each gets M, loaded once for the whole run); without it
    only the zoo's settings run. Mutant killed: the on_model filter dropped (the zoo setting would run on M)."""
    seen: list[tuple[str, object]] = []
    model = family_model("llama")

    def zoo(ctx):
        seen.append(("zoo", ctx.model))
        return Check("gap", 0.5, (0.4, 0.6), "recovered", n=3)

    def any_model(ctx):
        seen.append(("any", ctx.hooked()))
        return Check("gap", 0.5, (0.4, 0.6), "recovered", n=3)

    settings = [Setting("toy", "planted", "recovered", zoo), Setting("real", "planted", "recovered", any_model, on_model=True),
                Setting("real", "again", "recovered", any_model, on_model=True)]
    monkeypatch.setattr(controls, "all_settings", lambda: settings)
    loads = []
    from thinklens.engine import model as model_mod

    monkeypatch.setattr(model_mod.HookedModel, "load", classmethod(lambda cls, name, **kw: loads.append(name) or model))
    doc = run_job("validate", model="tiny-llama", out=tmp_path / "m", progress=False)
    assert [r["method"] for r in doc["rows"]] == ["real", "real"] and seen == [("any", model), ("any", model)]
    assert loads == ["tiny-llama"] and doc["model"] == "tiny-llama"
    seen.clear()
    doc = run_job("validate", out=tmp_path / "z", progress=False)
    assert [r["method"] for r in doc["rows"]] == ["toy"] and seen == [("zoo", None)]
    with pytest.raises(ThinklensError, match="methods with settings that run on any model"):
        run_job("validate", model="tiny-llama", methods=("toy",), out=tmp_path / "x", progress=False)


#: Every registered setting's kind as filed: planted (placed by construction), benchmark (a positive
#: control: expected, not placed), null. A setting may not change kind to pass (the hybrid's skill gap and absent
#: behaviour were planted; they stay planted and fail until the method recovers them).
KINDS_AS_FILED = {
    "benchmark": {"actadd/planted", "codi/planted-serial", "codi/planted-serial-full-chain", "coconut/planted-serial",
                  "induction/planted", "induction/planted-heads", "latent-seek/planted", "readout/planted",
                  "sae-real/planted", "steer/planted", "reasoning-vector/planted", "tuned-lens/benchmark"},
    "planted": {"hybrid/skill-gap", "hybrid/absent-behaviour", "hybrid/planted-latent", "lynx/planted", "lynx/planted-model",
                "mi-peaks/planted", "mi-peaks/planted-model",
                "mi-peaks/planted-synthetic", "findings/planted", "sae/planted", "tuned-lens/planted", "thought-anchors/planted",
                "faithfulness/planted"},
}


def test_every_setting_has_its_filed_kind_and_the_kind_matches_its_expectation():
    """Kills: a planted setting relabelled a null (expecting no effect) so that its failure counts as a pass."""
    for s in controls.all_settings():
        want = next((k for k, keys in KINDS_AS_FILED.items() if s.key in keys), "null")
        assert s.kind == want, (s.key, s.kind)
        assert (s.expected == "no-effect") == (s.kind == "null"), s.key
    with pytest.raises(ThinklensError, match="kind"):
        Setting("toy", "planted", "no-effect", lambda ctx: None, kind="planted")
    assert Setting("toy", "null", "no-effect", lambda ctx: None).kind == "null"


def test_a_setting_whose_precondition_fails_is_refused_in_one_line_and_not_run(tmp_path, monkeypatch, family_model):
    """``validate --model M``: a setting whose precondition M does not meet is not run (its run would take minutes);
    its row is failed with the reason, its line ends ``refused: <reason>``, the report says why. Mutants killed: the
    precondition ignored (the setting runs), or checked without ``--model`` (the zoo's settings have their organisms)."""
    ran: list[str] = []
    model = family_model("llama")

    def run(ctx):
        ran.append(ctx.model)
        return Check("gap", 0.5, (0.4, 0.6), "recovered", n=3)

    settings = [Setting("real", "planted", "recovered", run, on_model=True,
                        precondition=lambda ctx: f"{ctx.model} answers 0 of 8: real needs a model that reasons; try smol-r1"),
                Setting("real", "other", "recovered", run, on_model=True, precondition=lambda ctx: None)]
    monkeypatch.setattr(controls, "all_settings", lambda: settings)
    from thinklens.engine import model as model_mod

    monkeypatch.setattr(model_mod.HookedModel, "load", classmethod(lambda cls, name, **kw: model))
    doc = run_job("validate", model="tiny-llama", out=tmp_path / "m", progress=False)
    refused, other = doc["rows"]
    assert ran == ["tiny-llama"] and other["ok"] and not refused["ok"]
    assert refused["details"] == {"precondition_met": False,
                                  "precondition": "tiny-llama answers 0 of 8: real needs a model that reasons; try smol-r1"}
    assert refused["line"].endswith("refused: tiny-llama answers 0 of 8: real needs a model that reasons; try smol-r1")
    assert LINE.match(refused["line"].split(" refused: ")[0])
    from thinklens.calibration.validate import report

    assert "not validated: real planted: tiny-llama answers 0 of 8" in report(doc.value)
