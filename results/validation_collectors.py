"""The validation tables' summaries (the zoo's, the real weights') and every job on a real model (``results/collect.py``)."""

from __future__ import annotations

from typing import Any

from collect_core import OUT, RECORDS, collector, read_json, show, summary

#: The full validation table's records, each with the settings taken from it (the ``--methods`` of the command that
#: reproduces those rows; runs side by side, one per core).
VALIDATION_RECORDS = {"validate-steering": "steer,sae", "validate-rest": "lynx",
                      "validate-reasoning-vector": "reasoning-vector", "validate-mi-peaks": "mi-peaks",
                      "validate-findings": "findings",
                      "validate-latent-hybrid": "hybrid", "validate-latent-seek": "latent-seek", "validate-codi": "codi",
                      "validate-coconut": "coconut", "validate-lens": "tuned-lens", "validate-anchors": "thought-anchors",
                      "validate-faithfulness": "faithfulness"}
#: Threads of a record's run where it was not 1.
VALIDATION_THREADS: dict[str, int] = {}
#: The docs' marks of the validate records whose method's code changed since they were recorded (written by
#: ``python -m tools.stale_records --write``, from git: this collector reads the marks, not the history, so that a copy
#: of the tracked files rebuilds it).
STALE_MARKS = OUT / "stale_records.json"
VALIDATION_ORDER = ("lynx", "mi-peaks", "sae", "steer", "reasoning-vector", "hybrid", "latent-seek", "codi", "coconut",
                    "findings")


def stale_marks() -> dict[str, dict[str, Any]]:
    """Record -> its mark (``since``: the commit it was recorded at, ``mark``: ``stale since <commit>: <files>``) for
    every stale validate record (:data:`STALE_MARKS`); a record not there is not stale."""
    return {m["record"]: m for m in read_json(STALE_MARKS)["values"]["records"]}


def validation_rows(records: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Each record's rows of the settings it is listed for (:data:`VALIDATION_RECORDS`), in method order, each with its
    ``record`` and, when that record is stale (:func:`stale_marks`), ``stale``: ``stale since <commit>`` (else ""); the
    table's cell of both is ``record_cell``.
    Every registered setting must come from exactly one record: a setting with no record, a listed setting missing
    from its record, or one listed twice is an error."""
    from thinklens.calibration.controls import all_settings, select_settings

    records = VALIDATION_RECORDS if records is None else records
    marks = stale_marks()
    rows, seen = [], {}
    for name, methods in records.items():
        keys = {s.key for s in select_settings(tuple(methods.split(","))) if not s.on_model}  # real weights: their own table
        got = {f"{r['method']}/{r['setting']}": r for r in read_json(RECORDS / name / "results" / "validate.json")["rows"]}
        for key in sorted(keys):
            if key not in got:
                raise ValueError(f"validation record {name} has no row for {key} (it holds {sorted(got)})")
            if key in seen:
                raise ValueError(f"{key} is taken from both {seen[key]} and {name}")
            seen[key] = name
        current = {s.key: s for s in select_settings(tuple(methods.split(",")))}
        # judged by the setting's expectation today, not the one it was recorded under: a setting relabelled to pass
        # (as the hybrid's skill gap once was, recorded as a 'boundary' expecting no effect) counts as failed
        rows += [{k: r[k] for k in ("method", "setting", "statistic", "value", "ci", "verdict", "n", "target", "seconds")}
                 | {"expected": current[key].expected, "kind": current[key].kind,
                    "ok": r["verdict"] == current[key].expected, "recorded_expected": r["expected"], "record": name,
                    "stale": f"stale since {marks[name]['since']}" if name in marks else "",
                    "record_cell": f"`{name}`" + (f" stale since {marks[name]['since']}" if name in marks else "")}
                 for key, r in got.items() if key in keys]
    missing = sorted({s.key for s in all_settings() if not s.on_model} - seen.keys())  # the real-weight table is its own
    if missing:
        raise ValueError(f"no validation record holds {missing}: run them and list the record in VALIDATION_RECORDS")
    rows.sort(key=lambda r: VALIDATION_ORDER.index(r["method"]) if r["method"] in VALIDATION_ORDER else len(VALIDATION_ORDER))
    return rows


@collector("validation")
def validation() -> dict[str, Any]:
    """The validation table: every method on its planted and null settings (``thinklens run validate``, full size),
    from its committed records ``results/records/validate-*`` (:func:`validation_rows`)."""
    runs = [RECORDS / name for name in VALIDATION_RECORDS]
    rows = validation_rows()
    commands = [f"thinklens run validate --methods {m} --threads {VALIDATION_THREADS.get(name, 1)} --out RUN; "
                f"python results/collect.py --record RUN {name}" for name, m in VALIDATION_RECORDS.items()]
    stale = sorted({r["record"] for r in rows if r["stale"]})
    return summary(" & ".join(commands), runs, {name: read_json(RECORDS / name / "config.json") for name in VALIDATION_RECORDS},
                   {"rows": rows, "validated": sum(r["ok"] for r in rows), "n_settings": len(rows),
                    "failed": [f"{r['method']}/{r['setting']}" for r in rows if not r["ok"]],
                    "minutes": round(sum(r["seconds"] for r in rows) / 60, 1),
                    "stale_records": stale, "n_stale_rows": sum(bool(r["stale"]) for r in rows),
                    "n_records": len(VALIDATION_RECORDS)}, extra_sources=(show(STALE_MARKS),))


#: The real-weight validation table's records (``thinklens run validate --model M``, full size): record -> (model, the
#: ``--methods`` of the command that reproduces its rows).
REAL_VALIDATION_RECORDS = {"validate-real-smollm2": ("smollm2-135m", "induction"),
                           "validate-real-smollm2-readout": ("smollm2-135m", "readout"),
                           "validate-real-smollm2-steering": ("smollm2-135m", "actadd,sae-real"),
                           "validate-real-gemma": ("gemma-3-270m", "induction,readout")}


@collector("real_validation")
def real_validation() -> dict[str, Any]:
    """Effects known from the literature, on real pretrained weights (``validate --model``; docs/real-models.md): each
    record's rows with its model and the GGUF it was converted from."""
    from thinklens.calibration.controls import select_settings

    runs = [RECORDS / name for name in REAL_VALIDATION_RECORDS]
    rows, models = [], {}
    for name, (model, methods) in REAL_VALIDATION_RECORDS.items():
        doc = read_json(RECORDS / name / "results" / "validate.json")
        if doc.get("model") != model:
            raise ValueError(f"record {name} validated {doc.get('model')!r}, not {model!r}")
        keys = {s.key for s in select_settings(tuple(methods.split(","))) if s.on_model}
        got = {f"{r['method']}/{r['setting']}": r for r in doc["rows"]}
        if keys - got.keys():
            raise ValueError(f"real validation record {name} has no row for {sorted(keys - got.keys())}")
        src = doc.get("model_source") or {}
        models[model] = {"gguf": src.get("gguf"), "gguf_sha256": src.get("gguf_sha256"), "dequantized": src.get("dequantized")}
        rows += [{"model": model, **{k: got[key][k] for k in ("method", "setting", "expected", "statistic", "value", "ci",
                                                               "verdict", "ok", "n", "target", "seconds")},
                  "minutes": round(got[key]["seconds"] / 60, 1)} for key in sorted(keys, key=lambda k: list(got).index(k))]
    per_model = ", ".join(f"{m} {sum(r['ok'] for r in rows if r['model'] == m)}/{sum(r['model'] == m for r in rows)}" for m in models)
    commands = [f"thinklens run validate --model {model} --methods {methods} --threads 1 --out RUN; "
                f"python results/collect.py --record RUN {name}" for name, (model, methods) in REAL_VALIDATION_RECORDS.items()]
    return summary(" & ".join(commands), runs, {name: read_json(RECORDS / name / "config.json") for name in REAL_VALIDATION_RECORDS},
                   {"rows": rows, "models": models, "validated": sum(r["ok"] for r in rows), "n_settings": len(rows),
                    "per_model": per_model, "failed": [f"{r['model']} {r['method']}/{r['setting']}" for r in rows if not r["ok"]],
                    "minutes": round(sum(r["seconds"] for r in rows) / 60, 1)})


#: The jobs run on each real model (``python -m tools.real_jobs``), in the order of its plan.
REAL_JOBS_RECORD = "real-jobs"
REAL_MODEL_NAMES = ("smollm2-135m", "gemma-3-270m")


@collector("real_jobs")
def real_jobs() -> dict[str, Any]:
    """Every job on each real model at a first look's settings (docs/real-models.md): per (job, model)
    whether it ran or refused, its minutes, and its first finding's sentence or its one-line refusal."""
    run = RECORDS / REAL_JOBS_RECORD
    table = {k: r for k, r in read_json(run / "jobs.json").items() if r["model"] in REAL_MODEL_NAMES}  # not smol-r1's
    models = sorted({r["model"] for r in table.values()}, key=REAL_MODEL_NAMES.index)
    order = list(dict.fromkeys(r["job"] for r in table.values()))
    rows = []
    for job in order:
        for model in models:
            r = table.get(f"{model}/{job}")
            if r is None:  # the record is taken while a model's plan is still running: said as such, not skipped
                rows.append({"job": job, "model": model, "outcome": "not run yet", "minutes": 0.0, "n_findings": 0,
                             "said": "-"})
                continue
            said = (r.get("headlines") or ["(no findings: a data job)"])[0] if r["outcome"] == "ran" else r["reason"]
            rows.append({"job": job, "model": model, "outcome": r["outcome"], "minutes": round(r["seconds"] / 60, 1),
                         "n_findings": r.get("n_findings", 0), "said": said.replace("|", "/")[:220]})
    count = {m: {o: sum(r["outcome"] == o for r in rows if r["model"] == m) for o in ("ran", "refused", "error", "not run yet")}
             for m in models}
    from thinklens.runs.jobs import job_names

    registered = job_names()
    return summary(read_json(run / "meta.json")["command"], [run], {"models": models, "jobs": order},
                   {"rows": rows, "count": count, "n_jobs": len(order), "n_registered": len(registered),
                    "not_yet": [j for j in registered if j not in order], "n_models_planned": len(REAL_MODEL_NAMES),
                    "minutes": round(sum(r["minutes"] for r in rows), 1)})
