"""``thinklens run validate``: every method on its planted and null settings (shared/specs/controls.md).

Each registered setting (:mod:`thinklens.calibration.controls`; the ``thinklens.validations`` entry points) runs in
its own folder ``<run>/settings/<method>-<setting>`` (sub-runs, caches), and prints one line::

    validate <method> <setting> kind=<planted|null|benchmark> <statistic>=<value> [<lo>, <hi>]
        verdict=<recovered|no-effect|failed>

then ``validated=K/N``: K settings whose verdict is the one a working method gives. A setting that raises
is ``failed`` (its error in ``results/validate.json``), never a crash of the whole job. ``--quick`` runs
the small version of every setting (seconds to a minute each, what the default test tier runs); the full
version is what the README's validation table quotes. A finished setting is not run again when the job
is resumed with the same config.

Example:
    >>> JOB.name, ValidateConfig(quick=True).quick
    ('validate', True)
    >>> # result = thinklens.run_job("validate", quick=True, methods=("sae",), run_id="q")
    >>> # result["validated"], result["n_settings"]
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from thinklens.calibration.findings import Finding, findings_doc
from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup
from thinklens.runs.folders import to_jsonable
from thinklens.runs.jobs import Job, JobContext


@dataclass(frozen=True)
class ValidateConfig(ConfigGroup):
    """Settings of ``thinklens run validate``."""

    model: str = ""
    """A model to validate on (smollm2-135m, gemma-3-270m, a folder): runs the settings that need only a model
    (effects known on real weights: induction, contrastive steering, linear readout, SAE); empty: the zoo's
    settings, each on its own organism."""
    seed: int = 0
    """Seed of every setting's draws."""
    quick: bool = False
    """The small version of every setting (the default test tier's), instead of the full one."""
    methods: tuple[str, ...] = ()
    """Methods to validate (comma-separated), or single settings as method/setting; empty: all of them."""

    def check(self) -> None:
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ThinklensError.of("seed", self.seed, "an integer >= 0", f"pass {opt('seed', 0)}")


def run(config: ValidateConfig, ctx: JobContext) -> dict[str, Any]:
    from thinklens.calibration.controls import (  # lazy: CLI start-up (torch)
        SettingContext,
        failed_check,
        refused_check,
        select_settings,
        validate_line,
    )

    settings = [s for s in select_settings(config.methods) if s.on_model == bool(config.model)]
    if not settings:
        if config.model:
            raise ThinklensError.of("validation settings", f"{config.methods or 'all'} with {opt('model', config.model)}",
                                    "methods with settings that run on any model ("
                                    + ", ".join(sorted({s.method for s in select_settings() if s.on_model})) + ")",
                                    f"drop {opt('model')} to run the zoo's settings, or pick one of those methods")
        raise ThinklensError.of("validation settings", "none registered", "a job's validations or entry points in "
                                "thinklens.validations", "declare Job(..., validations={name: 'module:SETTINGS'}) in a job module")
    shared_models: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    done = ctx.run.finished()
    for setting in settings:
        key = f"{setting.method}-{setting.name}"
        if key in done:
            row = done[key]
        else:
            sctx = SettingContext(quick=config.quick, seed=config.seed, workdir=ctx.run.path / "settings" / key,
                                  device=ctx.options.device, dtype=ctx.options.dtype, threads=ctx.options.threads,
                                  progress=ctx.progress.enabled, model=config.model or None, _models=shared_models)
            t0 = time.perf_counter()
            crashed = False
            try:
                reason = setting.precondition(sctx) if setting.precondition is not None and config.model else None
                check = setting.run(sctx) if reason is None else refused_check(reason)
            except Exception as e:  # a setting that crashes is a failed validation, reported with its error
                check, crashed = failed_check(e), True
            row = to_jsonable({"method": setting.method, "setting": setting.name, "kind": setting.kind,
                               "expected": setting.expected,
                   **asdict(check), "ci": list(check.ci), "ok": check.verdict == setting.expected,
                   "seconds": round(time.perf_counter() - t0, 1),
                   "line": validate_line(setting, check) + (f" refused: {check.details['precondition']}"
                                                            if check.statistic == "precondition" else ""),
                   "help": setting.help})  # as a resumed run reads it back (NaN -> None)
            if not crashed:  # a crash is not a result: the resumed run tries the setting again
                ctx.run.mark_done(key, row)
        ctx.progress.log(row["line"])
        rows.append(row)
    k = sum(r["ok"] for r in rows)
    doc = {"quick": config.quick, "seed": config.seed, "model": config.model or None, "rows": rows, "validated": k, "n_settings": len(rows),
           "failed": [f"{r['method']}/{r['setting']}" for r in rows if not r["ok"]]}
    if config.model and config.model in shared_models:  # the weights validated: a GGUF's hash, for converted models
        doc["model_source"] = getattr(shared_models[config.model], "source", None)
    ctx.run.write_result("validate", doc)
    summary = {key: doc[key] for key in ("quick", "model", "validated", "n_settings", "failed")}
    summary["lines"] = [r["line"] for r in rows]
    summary["findings"] = validation_findings(rows)
    ctx.run.finish(summary)
    return doc


def validation_findings(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One finding per setting, in the findings' terms: on a planted setting the claim is that the method
    recovers the effect (``effect`` when its verdict is ``recovered``), on a null that the method finds an
    effect where none was planted (``no effect`` is the expected outcome); a setting that crashed is not shown
    either way and says so.

    Example:
        >>> row = dict(method="sae", setting="null", expected="no-effect", statistic="mean_best_cosine", value=0.37,
        ...            ci=[0.36, 0.38], n=256, verdict="no-effect", target="mean best cosine >= 0.9", details={})
        >>> (f,) = validation_findings([row])
        >>> f["claim"], f["verdict"], f["control"]
        ('sae finds an effect on its null setting (null)', 'no effect', 'mean best cosine >= 0.9')
        >>> validation_findings([row | {"verdict": "failed"}])[0]["verdict"]  # an effect found on the null
        'effect'
        >>> validation_findings([row | {"verdict": "failed", "details": {"precondition_met": False}}])[0]["verdict"]
        'no effect'
        >>> wide = {"equivalent": False, "margin": 0.03, "ci90": [-0.2, 0.08]}  # holds 0, crosses the margin
        >>> validation_findings([row | {"verdict": "failed", "details": {"tost_gap": wide}}])[0]["verdict"]
        'too few samples'
        >>> off = {"equivalent": False, "margin": 0.03, "ci90": [0.1, 0.3]}  # excludes 0: an effect on the null
        >>> validation_findings([row | {"verdict": "failed", "details": {"tost_gap": wide, "tost_p": off}}])[0]["verdict"]
        'effect'
    """
    found = []
    for r in rows:
        planted = r["expected"] == "recovered"
        claim = (f"{r['method']} recovers its planted effect ({r['setting']})" if planted
                 else f"{r['method']} finds an effect on its null setting ({r['setting']})")
        ci = tuple(float("nan") if v is None else v for v in (r.get("ci") or [None, None]))
        extra: dict[str, Any] = {"method": r["method"], "setting": r["setting"], "expected": r["expected"],
                                 "as_expected": r["verdict"] == r["expected"]}
        details = r.get("details") or {}
        error = details.get("error") if r["verdict"] == "failed" else None
        unmet = r["verdict"] == "failed" and details.get("precondition_met") is False
        if error:
            extra["otherwise"] = f"{r['method']} {r['setting']} failed to run: {error}"
        elif unmet:  # the setting itself is not what it should be: neither claim is shown
            extra["otherwise"] = (f"{r['method']} {r['setting']}: its precondition does not hold "
                                  f"({details.get('precondition', 'see its details')})")
        elif planted and r["verdict"] == "failed":
            extra["otherwise"] = f"{r['method']} does not recover its planted effect ({r['setting']}): short of its target"
        # a null failed because its equivalence tests are not shown while every one's interval still holds 0: the
        # method found no effect there either; the sample cannot tell (a 3-trajectory null on smol-r1)
        tosts = [t for k, t in details.items() if k.startswith("tost") and isinstance(t, dict) and "equivalent" in t]
        undecided = (not planted and r["verdict"] == "failed" and not error and not unmet and tosts
                     and all(t["equivalent"] or t["ci90"][0] <= 0 <= t["ci90"][1] for t in tosts))
        if undecided:
            extra["otherwise"] = (f"{r['method']} {r['setting']}: neither an effect nor its absence is shown (every "
                                  "equivalence interval holds 0 and crosses its margin: too few samples)")
        # planted: the claim holds when recovered; null: when the method found an effect there (verdict failed)
        holds = r["verdict"] == "recovered" if planted else (r["verdict"] == "failed" and not error and not unmet
                                                             and not undecided)
        found.append(Finding(claim=claim, statistic=r["statistic"], value=float("nan") if r["value"] is None else r["value"],
                             ci=ci, n=int(r.get("n") or 0), control=r.get("target", ""), control_value=None,
                             verdict="effect" if holds else "too few samples" if undecided else "no effect", extra=extra))
    return findings_doc(found)


def report(doc: dict[str, Any]) -> str:
    """Every setting's line, then ``validated=K/N`` (the headline)."""
    lines = [r["line"] for r in doc["rows"]]
    for r in doc["rows"]:
        if not r["ok"]:
            details = r.get("details") or {}
            why = details.get("error") or (details.get("precondition") if details.get("precondition_met") is False
                                           else None) or f"expected {r['expected']}"
            lines.append(f"  not validated: {r['method']} {r['setting']}: {why}")
    lines.append(f"validated={doc['validated']}/{doc['n_settings']}")
    return "\n".join(lines)


JOB = Job("validate", ValidateConfig, run, report=report, models=(), page="pages/8_Validation.py",
          help="every method on a planted effect (must recover it) and a null (must report none)",
          findings="thinklens.calibration.validate:validation_findings", capability="Validation and findings",
          validations={"stats": "thinklens.calibration.settings:SETTINGS"},
          smallest=("--methods", "findings/null", "--quick"))
