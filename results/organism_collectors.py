"""Real organisms' summaries: smol-r1's training and its evaluation against its base and the zoo's R1 models
(``results/collect.py``; docs/real-models.md's smol-r1 section)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collect_core import DEMO_RECORD, RECORDS, ROOT, collector, read_json, summary
from validation_collectors import stale_marks, validation_rows

#: The committed run of ``thinklens run organism-eval`` (its per-trace ground truth is in its results).
SMOL_R1_EVAL_RECORD = "smol-r1-eval"
SMOL_R1_ADAPTER = ROOT / "data" / "real-organisms" / "smol-r1"
#: smol-r1's first stage (the arithmetic and the format; smol-r1 and smol-r1-once are each 60 steps on from it).
SMOL_R1_BASE_ADAPTER = ROOT / "data" / "real-organisms" / "smol-r1-base"


def _rate(row: dict[str, Any]) -> dict[str, Any]:
    return {"k": row["k"], "n": row["n"], "rate": row["rate"], "lo": row["interval"][0], "hi": row["interval"][1]}


def _checks(checks: list) -> dict[str, Any]:
    """The training's per-operation checks (``[step, {kind: [right, n]}]``): the first and the last, each kind as
    ``{"k", "n", "rate"}``, and every kind's worst rate at the last check."""
    if not checks:
        return {}
    def row(step: int, kinds: dict[str, list[int]]) -> dict[str, Any]:
        return {"step": step, **{k: {"k": v[0], "n": v[1], "rate": v[0] / v[1]} for k, v in kinds.items()}}
    first, last = row(*checks[0]), row(*checks[-1])
    return {"first": first, "last": last, "n_checks": len(checks),
            "worst_last": min(v["rate"] for k, v in last.items() if k != "step")}


@collector("smol_r1")
def smol_r1() -> dict[str, Any]:
    """smol-r1's training record (its adapter's organism.json) and the organism-eval record: per model, accuracy with
    and without thinking by step count (Wilson 95%), and smol-r1's pooled ground truth with its forced exits."""
    run = RECORDS / SMOL_R1_EVAL_RECORD
    doc = read_json(run / "results" / "organism_eval.json")
    meta = read_json(SMOL_R1_BASE_ADAPTER / "organism.json")
    stage = read_json(SMOL_R1_ADAPTER / "organism.json")
    rows = []
    for ev in doc["models"]:
        steps = [k for k in ev["think"] if k != "all"]
        rows.append({"model": ev["model"], "opens_think": bool(ev.get("opens_think")),
                     "think": {k: _rate(ev["think"][k]) for k in [*steps, "all"]},
                     "no_think": {k: _rate(ev["no_think"][k]) for k in [*steps, "all"]},
                     "gain": ev["think"]["all"]["rate"] - ev["no_think"]["all"]["rate"]})
    organism = doc["models"][0]
    truth = organism["truth"]
    truth_rows = {k: _rate(v) for k, v in truth.items() if isinstance(v, dict)}
    training = _training(meta, SMOL_R1_BASE_ADAPTER)
    rounds = stage["recipe"]["mix"]["round_weights"]
    second = {**_training(stage, SMOL_R1_ADAPTER), "init": stage["init"],
              "round_share": [round(w / sum(rounds), 3) for w in rounds]}
    command = ("thinklens run zoo-train --model smol-r1-base --minutes 85; thinklens run zoo-train --model smol-r1; "
               "thinklens run zoo-train --model smol-r1-once; "
               "thinklens run organism-eval --threads 1 --out RUN; "
               f"python results/collect.py --record RUN {SMOL_R1_EVAL_RECORD}")
    config = {"organism-eval": read_json(run / "config.json"), "recipe": meta["recipe"], "second_stage": stage["recipe"]}
    from thinklens.zoo.jobs.organism_eval import findings  # the job's own findings of the recorded result

    paired = next((f for f in findings(doc) if f["control"].endswith("without thinking")), None)
    return summary(command, [run], config,
                   {"rows": rows, "organism": organism["model"], "truth": truth_rows, "cues": truth["cues"], "paired": paired,
                    "oracle_saving": truth["oracle_saving"], "n_traces": truth["n"], "training": training,
                    "second_stage": second, "rounds": _rounds(organism["traces"]),
                    "step_counts": doc["task"]["step_counts"], "n_eval": doc["task"]["n_eval"], "gsm8k": doc["gsm8k"]},
                   extra_sources=("data/real-organisms/smol-r1-base/organism.json",
                                  "data/real-organisms/smol-r1/organism.json"))


def _rounds(traces: list[dict[str, Any]]) -> dict[str, int]:
    """How many traces re-check 0, 1, 2, ... times (their ground truth's ``rounds``), as ``{"2": 97, ...}``."""
    out: dict[str, int] = {}
    for t in traces:
        out[str(t.get("rounds", 0))] = out.get(str(t.get("rounds", 0)), 0) + 1
    return dict(sorted(out.items()))


def _training(meta: dict[str, Any], adapter: Path) -> dict[str, Any]:
    """One training stage's record (an adapter's organism.json) as the docs read it."""
    recipe = meta["recipe"]
    return {"steps": meta["steps"], "planned_steps": meta["planned_steps"], "truncated": meta["truncated"],
            "train_minutes": round(meta["train_wall_s"] / 60, 1), "final_loss_ema": meta["final_loss_ema"],
            "trainable_params": meta["trainable_params"], "lr": recipe["lr"], "lora_rank": recipe["lora_rank"],
            "batch_tokens": recipe["batch_tokens"],
            # the adapter's size from its weights.json (sha256 and bytes): --check copies JSON, not weights
            "adapter_mb": round(read_json(adapter / "weights.json")["adapter_model.safetensors"]["bytes"] / 1e6, 2),
            "base_gguf": meta["base_gguf"], "base_gguf_sha256": meta["base_gguf_sha256"],
            "torch_threads": meta["torch_threads"], "checks": _checks(meta.get("checks", [])),
            "checks_every": recipe.get("check_every"),
            # each step packs about batch_tokens of R1 texts plus the drill rows (the recipe's sizes; padded)
            "tokens_per_step": recipe["batch_tokens"] + recipe.get("drill", {}).get("rows", 0)
            * recipe.get("drill", {}).get("row_tokens", 0)}



#: smol-r1's reasoning jobs (``python -m tools.real_jobs --models smol-r1``; rows of the real-jobs record) and its
#: ``validate --model smol-r1`` run, each beside the zoo's: the table of what transfers from the zoo to real weights.
REAL_JOBS_RECORD = "real-jobs"
#: When the committed smol-r1 adapter was published, for an adapter whose organism.json predates its ``published`` field
#: (commit 4433d67): a job row recorded before it was made with the previous adapter, and is shown stale.
SMOL_R1_PUBLISHED = "2026-12-07T18:25:00"


def adapter_published(name: str = "smol-r1") -> str:
    """When organism ``name``'s committed adapter was published (its organism.json's ``published``, else, for
    smol-r1's, the constant)."""
    return read_json(ROOT / "data" / "real-organisms" / name / "organism.json").get("published") or SMOL_R1_PUBLISHED
#: ``validate --model smol-r1``'s records, each at the size its config says (``quick`` or full): LYNX at both sizes,
#: mi-peaks at the full size. A row per (method, setting, size); a later record's row of the same one replaces an earlier
#: one's. A record that is not committed yet is left out.
SMOL_R1_VALIDATE_RECORDS = ("validate-smol-r1-lynx", "validate-smol-r1-lynx-full", "validate-smol-r1-mi-quick",
                            "validate-smol-r1-mi-full")


def smol_r1_validate_rows() -> tuple[list[dict[str, Any]], list[Path]]:
    """The rows of :data:`SMOL_R1_VALIDATE_RECORDS`, one per setting (the latest record's), and the records read. A row
    made before the adapter it ran on was published (smol-r1's, or smol-r1-once's for LYNX's null), or from a record whose
    method's code changed since (the docs' stale marks, :func:`validation_collectors.stale_marks`), says so in ``stale``
    (empty when current)."""
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    read = []
    code_stale = stale_marks()
    for record in SMOL_R1_VALIDATE_RECORDS:
        validate = RECORDS / record / "results" / "validate.json"
        if validate.is_file():
            read.append(validate.parents[1])
            created = read_json(validate.parents[1] / "meta.json").get("created", "")
            size = "quick" if read_json(validate.parents[1] / "config.json").get("quick") else "full"
            for r in read_json(validate)["rows"]:
                on = "smol-r1-once" if (r["method"], r["setting"]) == ("lynx", "null-model") else ORGANISM
                stale = ("previous adapter" if created < adapter_published(on)
                         else f"code changed since {code_stale[record]['since']}" if record in code_stale else "")
                rows[(r["method"], r["setting"], size)] = {**r, "record": record, "on": on, "size": size,
                                                           "stale": stale}
    return sorted(rows.values(), key=lambda r: (r["method"], r["setting"] != "planted-model", r["size"])), read


ORGANISM = "smol-r1"


def _said(f: dict[str, Any] | None) -> str:
    """A finding as one cell: statistic value [interval], n, control, verdict."""
    if f is None:
        return "-"
    ci = f.get("ci") or [None, None]
    interval = f" [{ci[0]:.3g}, {ci[1]:.3g}]" if None not in ci else ""
    control = f" vs {f['control']} {f['control_value']:.3g}" if f.get("control_value") is not None else ""
    return f"{f['statistic']} {f['value']:.3g}{interval}{control}, n={f['n']:.0f}: {f['verdict']}"


#: The power a size for a verdict is computed at (two-sided, at the findings' 0.05).
VERDICT_POWER = 0.8


def size_for_verdict(f: dict[str, Any] | None) -> str:
    """For a finding that says ``too few samples``, about how many units would decide it: the n at which the observed
    difference from the control is :data:`VERDICT_POWER` likely to clear a 95% interval, taking the spread from the
    finding's own interval (half-width h at n units: n' = n ((z(0.975) + z(power)) h / (z(0.975) |value - control|))^2,
    the normal approximation), and never under the findings' minimum; '-' for a finding with a verdict.

    Example:
        >>> size_for_verdict({"verdict": "too few samples", "value": 0.5, "control_value": 0.0, "ci": [0.1, 0.9], "n": 8})
        'about n=11 (80% power at the observed difference)'
        >>> size_for_verdict({"verdict": "effect", "value": 0.9, "control_value": 0.1, "ci": [0.8, 1.0], "n": 40})
        '-'
    """
    from scipy import stats

    from thinklens.calibration.findings import MIN_N

    if f is None or f.get("verdict") != "too few samples":
        return "-"
    ci, control = f.get("ci") or [None, None], f.get("control_value")
    if None in ci or control is None:
        return "not computable (no interval or no control)"
    diff, half = abs(f["value"] - control), (ci[1] - ci[0]) / 2
    if diff == 0:
        return f"none: no difference from the control at n={f['n']:.0f}; only an equivalence test could decide it"
    if half <= 0:
        return f"about n={MIN_N} (the findings' minimum; the interval has no width)"
    z = stats.norm.ppf(0.975)
    n = f["n"] * ((z + stats.norm.ppf(VERDICT_POWER)) * half / (z * diff)) ** 2
    return f"about n={max(MIN_N, int(-(-n // 1)))} ({VERDICT_POWER:.0%} power at the observed difference)"


#: The zoo run each smol-r1 job is set beside, where a committed record is closer than the demo's: the zoo's own R1
#: organism (tiny-r1, the same format trained from scratch) for mi-peaks and LYNX, and the README's correctness probe
#: (the demo's probe reads another target).
ZOO_R1_RECORDS = {"mi-peaks": "tiny-r1-mi-peaks", "lynx": "tiny-r1-lynx", "probe": "probe-readme-correct"}


def _zoo_findings() -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """Per job kind, the zoo run it is compared with and its findings: the R1 organism's record where there is one
    (:data:`ZOO_R1_RECORDS`), else the committed demo's run (its run id ``demo`` where the demo has two)."""
    from thinklens.runs.demo_plan import DEMO_STEPS

    out: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for step in DEMO_STEPS:
        run = DEMO_RECORD / str(step.kind) / step.run_id
        if step.kind is None or not (run / "meta.json").is_file() or (step.kind in out and step.run_id != "demo"):
            continue
        meta = read_json(run / "meta.json")
        config = read_json(run / "config.json")
        model = config.get("model") or f"{len(config.get('models') or [])} zoo models"  # latent-eval compares several
        out[step.kind] = (f"{model} ({step.kind}/{step.run_id})", meta.get("summary", {}).get("findings") or [])
    for kind, name in ZOO_R1_RECORDS.items():
        meta = read_json(RECORDS / name / "meta.json")
        out[kind] = (f"{read_json(RECORDS / name / 'config.json')['model']} (record {name})",
                     meta.get("summary", {}).get("findings") or [])
    return out


def slip_blind_ceiling(record: str) -> dict[str, Any] | None:
    """What decides whether LYNX or the organism is short on smol-r1: where the test negatives of ``record``'s planted-model
    setting lie (:func:`lynx_summary.where_negatives_lie`, kept beside the setting's run as ``negatives.json``), and per
    delta the most a rule blind to slipped conclusions could save under LYNX's per-event bound. Such a rule (at best, the
    ground truth's "the answer is stated here") scores a slipped conclusion as it scores a right one, so it may exit at
    a share q of the stated-answer cues only while q times the slips' share of the negatives stays within delta: its
    saving is at most min(1, delta / share) times the oracle's. LYNX's own saving beside it: above the ceiling, its probe
    tells some slips from right conclusions; far below it, the probe is short. None without the record's file.

    For instance, a share of 0.36 at delta 0.1 admits 0.28 of the oracle's exits.
    """
    from lynx_summary import NEGATIVES

    if not (RECORDS / record / "results" / "validate.json").is_file():
        return None
    rows = read_json(RECORDS / record / "results" / "validate.json")["rows"]
    planted = next((r for r in rows if (r["method"], r["setting"]) == ("lynx", "planted-model")), None)
    files = sorted((RECORDS / record / "settings").glob(f"lynx-planted-model/**/{NEGATIVES}"))
    if planted is None or not files:
        return None
    neg = read_json(files[0])
    oracle = float((planted.get("details") or {}).get("oracle_saving") or 0.0)
    share = neg["wrong_share_of_neg"] or 0.0
    per_delta = []
    for d in (planted.get("details") or {}).get("per_delta") or []:
        cap = oracle if share <= d["delta"] else oracle * d["delta"] / share
        per_delta.append({"delta": d["delta"], "lynx_saving": d["saving"], "ceiling": cap,
                          "above_ceiling": d["saving"] > cap})
    return {"record": record, **neg, "oracle_saving": oracle, "per_delta": per_delta}


@collector("smol_r1_transfer")
def smol_r1_transfer() -> dict[str, Any]:
    """What transfers from the zoo to real weights: per reasoning job, the zoo demo's first finding
    and smol-r1's, each with its statistic, interval, n and verdict (or smol-r1's refusal); per validation setting of
    ``validate --model smol-r1``, its verdict beside the zoo's setting of the same method and kind."""
    jobs = read_json(RECORDS / REAL_JOBS_RECORD / "jobs.json")
    planned = read_json(RECORDS / REAL_JOBS_RECORD / "meta.json").get("plans", {}).get(ORGANISM, [])
    zoo = _zoo_findings()
    published = adapter_published()
    rows = []
    for job in dict.fromkeys([*planned, *(r["job"] for r in jobs.values() if r["model"] == ORGANISM)]):
        subject, found = zoo.get(job, ("-", []))
        r = jobs.get(f"{ORGANISM}/{job}")
        if r is None:  # the record is taken while the plan is still running: said as such, not skipped
            rows.append({"job": job, "zoo_subject": subject, "zoo": _said(found[0] if found else None).replace("|", "/"),
                         "smol_r1": "not run yet", "transfer": "-", "outcome": "not run yet", "minutes": 0.0,
                         "needs": "-",
                         "n_findings": 0, "verdicts": []})
            continue
        mine = (r.get("findings") or [None])[0]
        theirs = found[0] if found else None
        smol = _said(mine) if r["outcome"] == "ran" else f"{r['outcome']}: {r['reason']}"
        same = ("-" if theirs is None or mine is None or r["outcome"] != "ran"
                else "same verdict" if mine["verdict"] == theirs["verdict"] else "differs")
        if r.get("date", "") < published:  # made with an adapter that is no longer committed
            same = "stale: previous adapter"
        rows.append({"job": r["job"], "zoo_subject": subject, "zoo": _said(theirs).replace("|", "/"),
                     "smol_r1": smol.replace("|", "/")[:240], "transfer": same, "outcome": r["outcome"],
                     "needs": size_for_verdict(mine) if r["outcome"] == "ran" else "-",
                     "minutes": round(r["seconds"] / 60, 1), "n_findings": r.get("n_findings", 0),
                     "verdicts": r.get("verdicts") or []})
    sources = [RECORDS / REAL_JOBS_RECORD, *(RECORDS / n for n in ZOO_R1_RECORDS.values())]
    settings = []
    validate_rows, records = smol_r1_validate_rows()
    sources += records
    zoo_rows = validation_rows() if validate_rows else []
    for s in validate_rows:
        twin = next((z for z in zoo_rows if z["method"] == s["method"] and z["kind"] == s.get("kind")), None)
        settings.append({"method": s["method"], "setting": s["setting"], "kind": s.get("kind", "-"), "size": s["size"],
                         "smol_r1": (f"stale: {s['stale']}; " if s["stale"] else "") + _said(s),
                         "expected": s["expected"], "ok": s["verdict"] == s["expected"] and not s["stale"],
                         "on": s["on"], "record": s["record"],
                         "zoo_setting": twin["setting"] if twin else "-", "zoo": _said(twin) if twin else "-",
                         "oracle_saving": (s.get("details") or {}).get("oracle_saving")})
    ceiling = next((c for c in map(slip_blind_ceiling, ("validate-smol-r1-lynx-full", "validate-smol-r1-lynx"))
                    if c is not None), None)
    return summary("python -m tools.real_jobs --models smol-r1; python -m tools.real_jobs --record; thinklens run validate "
                   "--model smol-r1 --methods lynx --quick --out RUN_A; thinklens run validate --model smol-r1 --methods "
                   "lynx --out RUN_B; thinklens run validate --model smol-r1 --methods mi-peaks --quick --out RUN_C; "
                   "thinklens run validate --model smol-r1 --methods mi-peaks --out RUN_D; python results/collect.py "
                   "--record RUN_X NAME for RUN_A-RUN_D and "
                   f"{', '.join(SMOL_R1_VALIDATE_RECORDS)} in turn", sources, {"organism": ORGANISM},
                   {"rows": rows, "settings": settings, "n_jobs": len(rows),
                    "ran": sum(r["outcome"] == "ran" for r in rows),
                    "validated": sum(s["ok"] for s in settings), "n_settings": len(settings),
                    "transfers": sum(r["transfer"] == "same verdict" for r in rows),
                    "stale": [r["job"] for r in rows if r["transfer"].startswith("stale")], "adapter_published": published,
                    # the most any exit rule could save on smol-r1's rollouts (first cue whose forced exit is right)
                    "lynx_oracle_saving": next((s["oracle_saving"] for s in settings
                                                if s["setting"] == "planted-model" and s.get("oracle_saving") is not None), None),
                    "differs": [r["job"] for r in rows if r["transfer"] == "differs"], "lynx_negatives": ceiling})
