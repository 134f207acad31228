"""``thinklens run latent-eval``: the comparison table of latent reasoning (No-CoT, CoT-SFT, Coconut, CODI,
Latent-SFT, CoT + LatentSeek): accuracy, reasoning positions, compression, training time.

Example:
    >>> JOB.name, JOB.config.__name__
    ('latent-eval', 'EvalConfig')
    >>> # thinklens run latent-eval --models tiny-cot,tiny-codi --n 100 --seek-n 0
    >>> # thinklens run latent-eval --models gpt2-cot,runs/codi/codi-gpt2/model --data gsm8k_test.jsonl --n 1319
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from thinklens.latent.config import EvalConfig
from thinklens.runs.headlines import pct
from thinklens.runs.jobs import DemoRun, Job, JobContext


def run(config: EvalConfig, ctx: JobContext) -> dict[str, Any]:
    """Every model on the same held-out problems, then the LatentSeek rows; results, decodings and figures."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.latent.evaluate import run_table  # lazy: CLI start-up (torch)

    if ctx.options.threads is None:
        torch.set_num_threads(1)  # fastest on a shared 2-core machine; --threads overrides
    return run_table(config, ctx.run, progress=ctx.progress, device=ctx.options.device, dtype=ctx.options.torch_dtype)


def report(result: dict[str, Any]) -> str:
    """The table in markdown."""
    from thinklens.latent.evaluate import format_table  # lazy: CLI start-up (torch)

    return format_table(result["rows"])


def headline(summary: dict, folder: Path) -> str:
    """The run in a line (Home, ``thinklens runs``): the three most accurate methods."""
    rows = [r for r in (summary.get("rows") or []) if isinstance(r.get("accuracy"), (int, float))]
    if not rows:
        return "no methods evaluated"
    top = sorted(rows, key=lambda r: -r["accuracy"])[:3]
    return ", ".join(f"{r['label']} {pct(r['accuracy'])}" for r in top) + f" ({len(rows)} methods)"


DEMO = (DemoRun(("--n-eval", "40", "--seek-n", "8")),)


JOB = Job(
    "latent-eval", EvalConfig, run, order=100, page="pages/6_Latent_reasoning.py", demo=DEMO, headline=headline,
    models=(), report=report,
    help="the latent-reasoning comparison table: accuracy, reasoning positions, compression, train time",
    description="Each model (token-level models in --prompt-format: a zoo model's own style, else its chat template; "
    "latent models, with latent.json, through their method in the format they were trained in) answers the same "
    "problems (held-out synthetic ones, or the first --n of --data), graded by the project's answer checker against "
    "the gold answers; reasoning positions are the explicit reasoning tokens plus the latent steps, compression is "
    "relative to the CoT row. With --seek-n, LatentSeek rows (harder synthetic problems, or the first --seek-n of "
    "--data). Writes results/table.json, decoding.json (the top tokens of every latent of the first problems), "
    "seek.json and the figures the app shows.",
    findings="thinklens.latent.latent_findings:table_findings", capability="Latent reasoning",
    traces="thinklens.latent.decoding_traces:READER", compare="thinklens.latent.latent_comparison:LATENT_EVAL",
    smallest=("--models", "tiny-cot", "--n-eval", "1", "--min-steps", "2", "--max-steps", "2", "--seek-n", "1", "--seek-min-steps", "2",
              "--seek-max-steps", "2", "--decode-examples", "1"),
)
