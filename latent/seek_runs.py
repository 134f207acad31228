"""LatentSeek over a problem set: which problems, which prompt format, which reward, resumable per problem.

The ``latent-seek`` job (:func:`run_seek`) and the LatentSeek rows of the comparison table call
:func:`seek_problems`. Problems are the held-out synthetic ones (``--n`` per step count) or the first
``--n`` of any ``--data`` source; each prompt is rendered in the model's format (a zoo style, or the chat
template for a real model); answers are graded by :func:`thinklens.data.answers.is_correct` against the gold.
The reward ``auto`` is PSRM for the zoo's formats and the paper's self-reward otherwise.

Example:
    >>> # summary = run_seek(model, LatentSeekConfig(model="org/model", data="gsm8k_test.jsonl", n_eval=100), run)
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import torch

from thinklens.data.formats import format_for
from thinklens.engine.tokenization import prompt_ids
from thinklens.latent import figures
from thinklens.latent.best_of_n import best_of_n_summary, oracle_samples, temperature_key
from thinklens.latent.config import LatentSeekConfig
from thinklens.latent.examples import gold_of
from thinklens.latent.latentseek import RewardFn, SeekIteration, SeekResult, accuracy_by_budget, latent_seek, load_reward
from thinklens.latent.self_reward import SelfConfidence, SelfReward
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import Progress
from thinklens.tasks.protocol import problems_by_steps

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat

#: Generation budget of LatentSeek when ``max_new_tokens`` is 0: the zoo's formats, and every other one (the paper's).
ZOO_SEEK_TOKENS, SEEK_TOKENS = 72, 1024


def seek_format(model: Any, cfg: LatentSeekConfig) -> "PromptFormat":
    """The prompt format LatentSeek uses for ``model`` (``cfg.prompt_format`` resolved for it)."""
    return format_for(model, cfg.prompt_format)


def seek_budget(cfg: LatentSeekConfig, fmt: "PromptFormat") -> int:
    """New tokens of each (re)generation: ``cfg.max_new_tokens``, or the format's default when it is 0."""
    return cfg.max_new_tokens or (ZOO_SEEK_TOKENS if fmt.is_zoo else SEEK_TOKENS)


def reward_name(spec: str, fmt: "PromptFormat") -> str:
    """``spec`` with ``auto`` resolved: PSRM for the zoo's formats (a tiny model cannot judge), self otherwise.

    Example:
        >>> from thinklens.data.formats import PromptFormat
        >>> reward_name("auto", PromptFormat("cot")), reward_name("auto", PromptFormat("chat")), reward_name("psrm", PromptFormat("chat"))
        ('psrm', 'self', 'psrm')
    """
    if spec != "auto":
        return spec
    return "psrm" if fmt.is_zoo else "self"


def make_reward(spec: str, model: Any, fmt: "PromptFormat", cfg: LatentSeekConfig) -> RewardFn:
    """The reward named ``spec`` (resolved by :func:`reward_name`); ``self`` judges with ``model`` in ``fmt``."""
    name = reward_name(spec, fmt)
    if name == "self":
        return SelfReward(model, fmt, max_new_tokens=cfg.verifier_max_new_tokens)
    if name == "confidence":
        return SelfConfidence(model)
    return load_reward(name)


def bind_reward(reward: Any, question: str, prompt: str) -> RewardFn:
    """The reward of one problem: bound to its prompt text (``for_prompt``) or its question (``for_question``)."""
    if hasattr(reward, "for_prompt"):
        return reward.for_prompt(prompt)
    if hasattr(reward, "for_question"):
        return reward.for_question(question)
    return reward


def seek_problem_list(cfg: LatentSeekConfig) -> list:
    """The first ``n`` problems of ``cfg.data``, or ``n`` held-out synthetic problems per step count."""
    if cfg.data:
        return list(cfg.load(limit=cfg.n_eval))
    return problems_by_steps(cfg.n_eval, cfg.min_steps, cfg.max_steps, seed=cfg.seed)


def seek_problems(model: Any, problems: list, cfg: LatentSeekConfig, run: RunFolder | None = None,
                  progress: Progress | None = None) -> list[SeekResult]:
    """LatentSeek on every problem (resumable per problem through the run folder's progress log), and on the same
    prompt the oracle best-of-N baseline of ``cfg.baseline_temperatures`` (:mod:`thinklens.latent.best_of_n`)."""
    fmt = seek_format(model, cfg)
    reward = make_reward(cfg.reward, model, fmt, cfg)
    budget = seek_budget(cfg, fmt)
    done = run.finished() if run is not None else {}
    results = []
    for i, p in enumerate((progress or Progress(False)).iter(problems, desc="latentseek", total=len(problems))):
        key = f"p{i:05d}"
        if key in done:
            results.append(seek_from_json(done[key]))
            continue
        text = fmt.render_problems([p], model.tokenizer)[0]
        prompt = prompt_ids(model.tokenizer, text)  # as generate reads it: one BOS
        gen = torch.Generator().manual_seed(cfg.seed * 100_003 + i)
        res = latent_seek(model, prompt, gold_of(p), cfg, bind_reward(reward, p.question, text), generator=gen,
                          max_new_tokens=budget)
        if cfg.baseline_temperatures:
            res.baseline = oracle_samples(model, prompt, gold_of(p), cfg, max_new_tokens=budget, seed=cfg.seed * 100_003 + i)
        results.append(res)
        if run is not None:
            run.mark_done(key, seek_to_json(res))
    return results


def seek_to_json(r: SeekResult) -> dict:
    """One problem's LatentSeek run as JSON (read back by :func:`seek_from_json`)."""
    return asdict(r)


def seek_from_json(d: dict) -> SeekResult:
    return SeekResult(**{**d, "iterations": [SeekIteration(**it) for it in d["iterations"]]})


def seek_summary(results: list[SeekResult], cfg: LatentSeekConfig) -> dict:
    """Accuracy before/after, by iteration budget, mean iterations / flips / ||z'-z||."""
    its = [r.iterations for r in results if r.iterations]
    flat = [it for rs in its for it in rs]
    baseline = {}
    for t in cfg.baseline_temperatures:
        done = [r for r in results if temperature_key(t) in r.baseline]
        baseline[temperature_key(t)] = best_of_n_summary([r.baseline[temperature_key(t)] for r in done],
                                                         [r.original_correct for r in done], cfg.max_iters)
    return {
        "n": len(results), "cot_accuracy": sum(r.original_correct for r in results) / len(results),
        "seek_accuracy": sum(r.final_correct for r in results) / len(results),
        "accuracy_by_budget": accuracy_by_budget(results, cfg.max_iters),
        "mean_iterations": sum(len(r.iterations) for r in results) / len(results),
        "mean_flipped": sum(it.flipped for it in flat) / len(flat) if flat else 0.0,
        "mean_delta_norm": sum(it.delta_norm for it in flat) / len(flat) if flat else 0.0,
        "mean_optimised": sum(r.n_optimised for r in results) / len(results),
        "mean_tokens": sum(r.n_tokens for r in results) / len(results),
        "mean_checked_chains": 1 + sum(len(r.iterations) for r in results) / len(results),
        "baseline": baseline,
    }


def run_seek(model: Any, cfg: LatentSeekConfig, run: RunFolder, *, progress: Progress | None = None) -> dict:
    """The ``latent-seek`` job: LatentSeek on its problems; writes results/seek.json and the budget figure."""
    fmt = seek_format(model, cfg)
    reward = reward_name(cfg.reward, fmt)
    results = seek_problems(model, seek_problem_list(cfg), cfg, run, progress)
    summary = seek_summary(results, cfg)
    setting = {"reward": reward, "prompt_format": fmt.name, "max_new_tokens": seek_budget(cfg, fmt)}
    run.write_result("seek", {"config": cfg, "setting": setting, "summary": summary,
                              "problems": [seek_to_json(r) for r in results]})
    run.write_figure("seek_budget", figures.figure_seek_budget(summary["accuracy_by_budget"], reward, summary["baseline"]))
    run.finish({"cot_accuracy": summary["cot_accuracy"], "seek_accuracy": summary["seek_accuracy"]})
    return summary
