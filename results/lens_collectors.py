"""The lenses' summary (docs/lens.md): ``thinklens run tuned-lens`` on SmolLM2-135M and tiny-r1, and its validation
settings (``results/collect.py``)."""

from __future__ import annotations

from typing import Any

from collect_core import RECORDS, collector, read_json, setting_rows, summary

#: model -> the committed record of its ``tuned-lens`` run at the job's default size.
LENS_RECORDS = {"smollm2-135m": "tuned-lens-smollm2-135m", "tiny-r1": "tuned-lens-tiny-r1"}
#: The zoo settings at full size (also a row source of the validation table: validation_collectors.VALIDATION_RECORDS).
LENS_VALIDATE_RECORD = "validate-lens"
#: The benchmark setting on SmolLM2-135M (``validate --model smollm2-135m --methods tuned-lens --quick``).
LENS_REAL_RECORD = "validate-lens-smollm2"


def _job_values(record: str) -> dict[str, Any]:
    meta = read_json(RECORDS / record / "meta.json")
    s = meta["summary"]
    layers = [{k: r[k] for k in ("layer", "logit_kl", "logit_ci", "tuned_kl", "tuned_ci", "reduction", "reduction_ci")}
              for r in s["layers"]]
    findings = [{k: f[k] for k in ("claim", "statistic", "value", "ci", "n", "control", "control_value", "verdict")}
                for f in s["findings"]]
    traces = [t for t in s["traces"] if t.get("answer_step") is not None]
    return {"layers": layers, "findings": findings, "n_eval": s["n_eval"], "train_tokens": s["train_tokens"],
            "eval_tokens": s["eval_tokens"], "steps": s["steps"], "n_layers": len(layers),
            "min_reduction": min(r["reduction"] for r in layers[:-1]), "traces": traces, "n_traces": len(s["traces"]),
            "n_traces_answered": len(traces)}


#: What the docs read of each tuned-lens setting's details.
LENS_DETAILS = ("blowup", "logit_kl_clean", "tuned_kl_clean", "logit_kl_planted", "tuned_kl_planted",
                                   "marginal_kl", "output_change", "shown_worse", "worst_block")


@collector("lens")
def lens() -> dict[str, Any]:
    """Per model: the held-out KL to the final output per block, logit against tuned lens (95% intervals over texts),
    the findings and the answer's first top-1 per trace; the planted, null and benchmark settings' rows."""
    runs = [RECORDS / r for r in (*LENS_RECORDS.values(), LENS_VALIDATE_RECORD, LENS_REAL_RECORD)]
    config = {model: read_json(RECORDS / rec / "config.json") for model, rec in LENS_RECORDS.items()}
    values = {"models": {model: _job_values(rec) for model, rec in LENS_RECORDS.items()},
              "settings": [*setting_rows(LENS_VALIDATE_RECORD, "tuned-lens", LENS_DETAILS),
                           *setting_rows(LENS_REAL_RECORD, "tuned-lens", LENS_DETAILS)]}
    command = ("thinklens run tuned-lens --model smollm2-135m --threads 1 --out RUN1; thinklens run tuned-lens --model tiny-r1 "
               "--threads 1 --out RUN2; thinklens run validate --methods tuned-lens --threads 1 --out RUN3; thinklens run "
               "validate --model smollm2-135m --methods tuned-lens --quick --threads 1 --out RUN4; "
               + "; ".join(f"python results/collect.py --record RUN{i + 1} {rec}" for i, rec in enumerate(
                   (*LENS_RECORDS.values(), LENS_VALIDATE_RECORD, LENS_REAL_RECORD))))
    return summary(command, runs, config, values)
