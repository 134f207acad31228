"""Write the templates of docs/real-models.md's two tables, one row per row of their summaries:
``results/readme/real_validation.md`` (from ``results/real_validation.json``, with one weights clause per model) and
``results/readme/real_jobs.md`` (from ``results/real_jobs.json``). Run after ``python results/collect.py NAME`` whenever
a table gains or loses rows, then ``python results/collect.py --check --write`` and ``python -m tools.readme_results
--write``."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = "| model | method | setting | statistic | value [95% CI] | control / target | n | verdict | expected | minutes |"


def cell(i: int, field: str) -> str:
    return "{{values.rows[%d].%s}}" % (i, field)


def row(i: int) -> str:
    v = lambda f: cell(i, f)  # noqa: E731
    return (f"| {v('model')} | {v('method')} | {v('setting')} | `{v('statistic')}` | {v('value|.3g')} "
            f"[{v('ci[0]|.3g')}, {v('ci[1]|.3g')}] | {v('target')} | {v('n|.0f')} | {v('verdict')} | {v('expected')} | "
            f"{v('minutes|.1f')} |")


def template(values: dict) -> str:
    weights = "; ".join(f'{m} from `{{{{values.models["{m}"].gguf}}}}` (sha256 `{{{{values.models["{m}"].gguf_sha256}}}}`)'
                        for m in values["models"])
    lines = [COLUMNS, "|---" * 10 + "|", *(row(i) for i in range(len(values["rows"])))]
    tail = ("`validated={{values.validated|.0f}}/{{values.n_settings|.0f}}` on real weights (per model: "
            "{{values.per_model}}), full-size settings, one thread each, {{values.minutes|.0f}} minutes in all; records "
            f"`results/records/validate-real-*`. Weights: {weights}, dequantized to float32. Settings whose verdict is not "
            "the expected one: {{values.failed}}.")
    return "\n".join(lines) + "\n\n" + tail + "\n"


def jobs_template(values: dict) -> str:
    """One row per (job, model): what happened, in how long, what it said."""
    def jrow(i: int) -> str:
        v = lambda f: "{{values.rows[%d].%s}}" % (i, f)  # noqa: E731
        return f"| `{v('job')}` | {v('model')} | {v('outcome')} | {v('minutes|.1f')} | {v('said')} |"

    counts = ", ".join(f'{m}: {{{{values.count["{m}"].ran|.0f}}}} ran, {{{{values.count["{m}"].refused|.0f}}}} refused, '
                       f'{{{{values.count["{m}"].error|.0f}}}} errors, {{{{values.count["{m}"]["not run yet"]|.0f}}}} not run yet'
                       for m in values["count"])
    lines = ["| job | model | outcome | minutes | what it said (its first finding, or its refusal) |", "|---" * 5 + "|",
             *(jrow(i) for i in range(len(values["rows"])))]
    tail = (f"{{{{values.n_jobs|.0f}}}} of the {{{{values.n_registered|.0f}}}} registered jobs recorded so far, on "
            f"{len(values['count'])} of the {{{{values.n_models_planned|.0f}}}} real models ({counts}), "
            "{{values.minutes|.0f}} minutes in all, one thread each, on a machine shared with other jobs (the minutes "
            "are not timings); not yet run: {{values.not_yet}}. Record `results/records/real-jobs/jobs.json`.")
    return "\n".join(lines) + "\n\n" + tail + "\n"


def transfer_template(values: dict) -> str:
    """smol-r1's transfer table (results/smol_r1_transfer.json): per reasoning job, the zoo's finding and smol-r1's;
    then its validation settings beside the zoo's."""
    def jrow(i: int) -> str:
        v = lambda f: "{{values.rows[%d].%s}}" % (i, f)  # noqa: E731
        return (f"| `{v('job')}` | {v('zoo_subject')} | {v('zoo')} | {v('smol_r1')} | {v('transfer')} | {v('needs')} | "
                f"{v('minutes|.1f')} |")

    def srow(i: int) -> str:
        v = lambda f: "{{values.settings[%d].%s}}" % (i, f)  # noqa: E731
        return (f"| {v('method')} | {v('kind')} | {v('zoo_setting')}: {v('zoo')} | {v('size')} | {v('setting')}: "
                f"{v('smol_r1')} | {v('expected')} |")

    lines = ["| job | zoo run | zoo: first finding | smol-r1: first finding, or its refusal | transfer | size for a verdict "
             "| minutes |", "|---" * 7 + "|", *(jrow(i) for i in range(len(values["rows"])))]
    tail = ("{{values.ran|.0f}} of {{values.n_jobs|.0f}} reasoning jobs ran on smol-r1 ({{values.transfers|.0f}} with the "
            "zoo's verdict; verdicts that differ: {{values.differs}}); minutes on a shared machine, one thread each. "
            "Record `results/records/real-jobs/jobs.json` (smol-r1's rows). Rows recorded before the committed adapter "
            "was published ({{values.adapter_published}}) were made with the previous smol-r1 and say so (stale: "
            "{{values.stale}}).")
    out = "\n".join(lines) + "\n\n" + tail + "\n"
    if values["settings"]:
        out += ("\n| method | kind | zoo setting: result | size | smol-r1 setting: result | expected |\n" + "|---" * 6 + "|\n"
                + "\n".join(srow(i) for i in range(len(values["settings"])))
                + "\n\n`validated={{values.validated|.0f}}/{{values.n_settings|.0f}}` on smol-r1 (each row at its size: "
                "`validate --quick`'s or the full one; records `results/records/validate-smol-r1-*`). The most any exit rule "
                "could save on smol-r1's LYNX rollouts (the oracle: the first cue whose forced exit is right): "
                "{{values.lynx_oracle_saving|.3g}}.\n")
    neg = values.get("lynx_negatives")
    if neg:
        n = "{{values.lynx_negatives.%s}}"
        deltas = "; ".join(f"at delta {{{{values.lynx_negatives.per_delta[{i}].delta}}}} at most "
                           f"{{{{values.lynx_negatives.per_delta[{i}].ceiling|.3g}}}} against LYNX's "
                           f"{{{{values.lynx_negatives.per_delta[{i}].lynx_saving|.3g}}}}"
                           for i in range(len(neg["per_delta"])))
        out += (f"\nWhat decides LYNX's planted row (record `{n % 'record'}`, its test split): {n % 'neg_wrong_rollout'} of "
                f"its {n % 'n_neg'} negative events ({n % 'wrong_share_of_neg|.2f'} of them) lie in the "
                f"{n % 'wrong_rollouts'} of {n % 'rollouts'} rollouts whose full answer is wrong: slipped conclusions, "
                f"where exiting costs nothing against the full rollout. The probe scores them as it scores right "
                f"conclusions (mean {n % 'mean_prob.neg_wrong_rollout|.2f'} against {n % 'mean_prob.pos|.2f'}; "
                f"{n % 'mean_prob.neg_right_rollout|.2f'} on the cues before the answer): its AUROC is "
                f"{n % 'auroc|.3f'} over every event and {n % 'auroc_right_rollouts|.4f'} over the events of rollouts "
                f"whose answer is right. A rule blind to slips (at best the ground truth's 'the answer is stated here') "
                f"could save, under the same per-event bound, {deltas}.\n")
    return out


if __name__ == "__main__":
    doc = json.loads((ROOT / "results" / "real_validation.json").read_text())["values"]
    (ROOT / "results" / "readme" / "real_validation.md").write_text(template(doc))
    jobs = ROOT / "results" / "real_jobs.json"
    if jobs.exists():
        (ROOT / "results" / "readme" / "real_jobs.md").write_text(jobs_template(json.loads(jobs.read_text())["values"]))
    transfer = ROOT / "results" / "smol_r1_transfer.json"
    if transfer.exists():
        (ROOT / "results" / "readme" / "smol_r1_transfer.md").write_text(
            transfer_template(json.loads(transfer.read_text())["values"]))
