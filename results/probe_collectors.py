"""The probe sweep's and LYNX's summaries (``results/collect.py``)."""

from __future__ import annotations

from typing import Any

from collect_core import RECORDS, collector, read_json, summary
from lynx_summary import delta_sets, lynx_run_values


@collector("probe_sweep")
def probe_sweep() -> dict[str, Any]:
    """The probe sweeps on tiny-think: the running value (ridge R^2) and eventual correctness (AUROC), from their committed
    records ``results/records/probe-readme-intermediate`` and ``results/records/probe-readme-correct``."""
    inter, corr = RECORDS / "probe-readme-intermediate", RECORDS / "probe-readme-correct"

    def by_site(sweep: dict[str, Any]) -> dict[str, Any]:
        return {site: {"mean": m, "std": s} for site, m, s in zip(sweep["sites"], sweep["mean"], sweep["std"])}

    a, b = read_json(inter / "results" / "sweep.json"), read_json(corr / "results" / "sweep.json")
    intention = read_json(corr / "results" / "intention.json")["styles"]["think"]
    values = {"intermediate": {"r2": by_site(a["sweeps"]["r2"]), "best_site": a["best_site"], "n_rows": a["n_rows"]},
              "correct": {"auroc": by_site(b["sweeps"]["auroc"]), "best_site": b["best_site"],
                          "model_accuracy": b["model_accuracy"], "steps_only_auroc": b["steps_only_auroc"],
                          "intention_entropy_bits": intention["entropy_bits_mean"]}}
    config = {"intermediate": read_json(inter / "config.json"), "correct": read_json(corr / "config.json")}
    return summary("thinklens run probe --model tiny-think --threads 1 --run-id readme-intermediate && thinklens run "
                   "probe --model tiny-think --target correct --min-steps 1 --max-steps 8 --threads 1 --run-id "
                   "readme-correct; python results/collect.py --record runs/probe/readme-intermediate "
                   "probe-readme-intermediate; python results/collect.py --record runs/probe/readme-correct probe-readme-correct",
                   [inter, corr], config, values)


# ---------------------------------------------------------------------------------------------- LYNX

#: The LYNX records: name -> the command's options after ``thinklens run lynx --model tiny-think``.
LYNX_RECORDS = {
    "lynx-1to4": "--n-train 600 --n-calibration 600 --n-test 600 --threads 1 --run-id after-600",
    "lynx-cue-calibration": "--n-train 600 --n-calibration 600 --n-test 600 --threads 1 --no-calibration-fallbacks "
                            "--skip-vacuous --run-id after-600-cuecal",
    "lynx-4to8": "--min-steps 4 --max-steps 8 --n-train 600 --n-calibration 600 --n-test 600 --skip-vacuous --threads 1 "
                 "--run-id after-4to8",
}


def lynx_summary(name: str, values: dict[str, Any]) -> dict[str, Any]:
    run, options = RECORDS / name, LYNX_RECORDS[name]
    run_id = options.rsplit(" ", 1)[-1]
    return summary(f"thinklens run lynx --model tiny-think {options}; python results/collect.py --record "
                   f"runs/lynx/{run_id} {name}", [run], read_json(run / "config.json"), values)


@collector("lynx_1to4")
def lynx_1to4() -> dict[str, Any]:
    """LYNX on tiny-think, 1-4 step problems: the run with the reference's calibration and its conformal sets per
    delta, from its committed record ``results/records/lynx-1to4``."""
    run = RECORDS / "lynx-1to4"
    return lynx_summary("lynx-1to4", {**lynx_run_values(run), "sets": delta_sets(run)})


@collector("lynx_cue_calibration")
def lynx_cue_calibration() -> dict[str, Any]:
    """LYNX on tiny-think, 1-4 step problems, calibrated on cue events only (``results/records/lynx-cue-calibration``)."""
    return lynx_summary("lynx-cue-calibration", lynx_run_values(RECORDS / "lynx-cue-calibration"))


@collector("lynx_4to8")
def lynx_4to8() -> dict[str, Any]:
    """LYNX on tiny-think, 4-8 step problems (``results/records/lynx-4to8``)."""
    return lynx_summary("lynx-4to8", lynx_run_values(RECORDS / "lynx-4to8"))
