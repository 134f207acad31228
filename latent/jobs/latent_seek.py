"""``thinklens run latent-seek``: LatentSeek (Li et al. 2025), test-time optimisation of a frozen model's
latents (no training), on held-out synthetic problems or any ``--data`` source, prompted in the model's format.

Per problem (held-out synthetic ones, or the first ``--n`` of ``--data``), a greedy CoT of the frozen model in its
prompt format, then up to ``--max-iters`` Adam steps on the final-layer states of its first tokens guided by a
reward (psrm: the gold answer, graded by the project's answer checker; self: the model judges its own solution
with the paper's four weighted verifier prompts; confidence: no gold, the model's least likely token of its
chain; auto: psrm for the zoo's formats, self otherwise; or module:function), re-decoding after each. On the same
prompts, the oracle best-of-N baseline that a gold-answer reward implies (``--baseline-temperatures``,
``--baseline-samples``: N = 1 + ``--max-iters`` sampled chains, correct if any is). Writes ``results/seek.json``
(every problem's iterations and baseline chains) and the accuracy-vs-budget figure; an interrupted run resumes
problem by problem.

Example:
    >>> JOB.name, JOB.config.__name__
    ('latent-seek', 'LatentSeekConfig')
    >>> # thinklens run latent-seek --variant sample --lr 0.5 --seed 20000 --n 30
    >>> # thinklens run latent-seek --model deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B --data gsm8k_test.jsonl --n 1319 \\
    >>> #     --prompt-format chat --reward self --rho 0.1 --lr 0.03 --device cuda --dtype bfloat16
"""

from __future__ import annotations

from typing import Any

from thinklens.calibration.findings import findings_doc
from thinklens.latent.config import LatentSeekConfig
from thinklens.latent.latent_findings import seek_findings
from thinklens.runs.jobs import Job, JobContext, RunOptions


def load(name: str, options: RunOptions) -> Any:
    """The frozen model (zoo siblings in data/zoo by bare name) on the job's device and dtype."""
    from thinklens.latent.latent_model import load_hooked_model  # lazy: CLI start-up (torch)

    return load_hooked_model(name, device=options.device, dtype=options.torch_dtype)


def run(config: LatentSeekConfig, ctx: JobContext) -> dict[str, Any]:
    """LatentSeek on every problem not yet done (resumable); the summary (accuracy before/after, by budget, and the
    findings: after against before and against oracle best-of-N, McNemar on the same problems)."""
    import torch  # lazy: CLI start-up (torch)

    from thinklens.latent.seek_runs import run_seek  # lazy: CLI start-up (torch)

    if ctx.options.threads is None:
        torch.set_num_threads(1)  # fastest on a shared 2-core machine; --threads overrides
    summary = run_seek(ctx.model, config, ctx.run, progress=ctx.progress)
    summary["findings"] = findings(ctx.run.read_result("seek")["problems"], summary)
    ctx.run.finish({**(ctx.run.meta().get("summary") or {}), "findings": summary["findings"]})
    return summary


def findings(problems: list[dict[str, Any]], summary: dict[str, Any]) -> list[dict[str, Any]]:
    """LatentSeek after optimisation against its greedy CoT chain and against oracle best-of-N of each temperature,
    paired on the same problems (:func:`thinklens.latent.latent_findings.seek_findings`), from ``results/seek.json``'s problems.

    Example:
        >>> p = lambda i: {"answer": 4, "original_text": "#### 5", "original_reward": 0.0, "n_tokens": 3, "n_optimised": 1,
        ...                "final_text": "#### 4" if i < 12 else "#### 5", "iterations": [], "baseline": {"1.0": [i < 3, False]}}
        >>> b = {"1.0": {"samples": 2, "best_of_n": 0.15, "n": 20}}
        >>> [f["verdict"] for f in findings([p(i) for i in range(20)], {"baseline": b})]
        ['effect', 'effect']
    """
    from thinklens.latent.seek_runs import seek_from_json  # lazy: CLI start-up (torch)

    results = [seek_from_json(p) for p in problems]
    oracle = {t: [any(r.baseline[t]) if t in r.baseline else None for r in results] for t in (summary.get("baseline") or {})}
    return findings_doc(seek_findings([r.original_correct for r in results], [r.final_correct for r in results],
                                      baseline=summary.get("baseline"), oracle_correct=oracle))


def report(summary: dict[str, Any]) -> str:
    """One line: accuracy before and after, and by iteration budget.

    Example:
        >>> print(report({"cot_accuracy": 0.5, "seek_accuracy": 0.75, "n": 4, "accuracy_by_budget": [0.5, 0.75]}))
        CoT 0.500 -> LatentSeek 0.750 on 4 problems; by budget: 0.50 0.75
        >>> b = {"samples": 2, "best_of_n": 1.0, "sample_accuracy": 0.5, "greedy_or_samples_by_budget": [0.5, 1.0]}
        >>> print(report({"cot_accuracy": 0.5, "seek_accuracy": 0.5, "n": 2, "accuracy_by_budget": [0.5, 0.5],
        ...               "baseline": {"0.5": b}}).splitlines()[1])
        oracle best-of-2 sampling at T=0.5: 1.000 (one sample 0.500; greedy + samples by budget: 0.50 1.00)
    """
    line = (f"CoT {summary['cot_accuracy']:.3f} -> LatentSeek {summary['seek_accuracy']:.3f} on {summary['n']} problems; "
            f"by budget: {' '.join(f'{a:.2f}' for a in summary['accuracy_by_budget'])}")
    for t, b in (summary.get("baseline") or {}).items():
        if b:
            line += (f"\noracle best-of-{b['samples']} sampling at T={t}: {b['best_of_n']:.3f} (one sample "
                     f"{b['sample_accuracy']:.3f}; greedy + samples by budget: "
                     f"{' '.join(f'{a:.2f}' for a in b['greedy_or_samples_by_budget'])})")
    return line


JOB = Job("latent-seek", LatentSeekConfig, run, load=load, report=report,
          help="LatentSeek: test-time optimisation of a CoT model's latents (no training)",
          findings="thinklens.latent.latent_findings:seek_findings", capability="Latent reasoning",
          validations={"latent-seek": "thinklens.latent.validation:SETTINGS"},
          smallest=("--model", "tiny-cot", "--n-eval", "1", "--min-steps", "2", "--max-steps", "2", "--max-iters", "1", "--max-new-tokens",
                    "8", "--rho", "0.5", "--threshold", "1.0"))
