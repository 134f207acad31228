"""``thinklens run mi-peaks``: MI peaks and thinking tokens (Qian et al. 2025).

Example:
    >>> JOB.name, JOB.config.__name__, sorted(JOB.presets)
    ('mi-peaks', 'MIPeaksJobConfig', ['default', 'demo', 'paper'])
"""

from __future__ import annotations

from typing import Any

from analyses.mi.jobconfig import PRESETS, MIPeaksJobConfig
from thinklens.jobs import Job, JobContext


def run(config: MIPeaksJobConfig, ctx: JobContext) -> dict[str, Any]:
    """Every stage not yet done; the summary written to meta.json."""
    from analyses.mi.job import run_mi_peaks

    return run_mi_peaks(ctx.model, config, ctx.run, progress=ctx.progress.enabled, load=ctx.load)


def report(summary: dict[str, Any]) -> str:
    lines = [f"problems: {summary['n_problems']}; mean tokens: {summary['mean_tokens']:.1f}; "
             f"peak fraction: {summary['mean_peak_fraction']:.3f}",
             f"top thinking words: {', '.join(summary['top_words']) or '-'}"]
    for key, m in summary.get("models", {}).items():
        lines.append(f"  {key} ({m['style']}): accuracy {m['accuracy']:.3f}, mean MI {m['mean_mi']:.4g}, "
                     f"peak fraction top-k {m['peak_fraction']['top_k']:.3f} / iqr {m['peak_fraction']['iqr']:.3f}, "
                     f"top words {', '.join(m['top_words']) or '-'}")
    lines += [f"{stage}: {summary[stage]}" for stage in ("suppression", "recycling", "ttts") if stage in summary]
    return "\n".join(lines)


JOB = Job(
    "mi-peaks", MIPeaksJobConfig, run, presets=PRESETS, report=report,
    help="MI peaks and thinking tokens (Qian et al. 2025)",
    description="Greedy trajectories of a reasoning model and its non-reasoning siblings on the synthetic task or a "
    "GSM8k JSONL file; nHSIC with the golden answer per token at several sites (reference, median-sigma and L2 "
    "variants, shuffled-answer control); peaks by top-k and IQR; thinking-token enrichment with CIs; optionally the "
    "suppression test, Representation Recycling (with a layer sweep) and thinking-token test-time scaling. "
    "`--preset demo` runs all of it on the zoo in a few CPU minutes.",
)
