"""The comparison table (No-CoT, CoT-SFT, Coconut, CODI, Latent-SFT, CoT + LatentSeek) and LatentSeek runs.

Every accuracy uses the one answer parser (:func:`thinklens.answers.parse_answer`). Reasoning positions
are the explicit tokens before the answer marker plus the latent steps; compression is the CoT model's
mean reasoning positions divided by a method's.

The jobs ``latent-eval`` (:func:`run_table`) and ``latent-seek`` (:func:`run_seek`) call these.

Example:
    >>> # run = RunFolder.create("latent-eval", EvalConfig(), run_id="table")
    >>> # table = run_table(EvalConfig(n=100), run)     # writes results/table.json, decoding.json, seek.json
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from latent.config import EvalConfig, LatentSeekConfig
from latent.data import example_from_problem
from latent.latent_model import load_hooked_model, load_latent_model, marker_index, resolve_model
from latent.latentseek import SeekIteration, SeekResult, accuracy_by_budget, latent_seek, load_reward
from latent.methods import METHODS
from thinklens.answers import parse_answer
from thinklens.jobs import Progress
from thinklens.runs import RunFolder
from thinklens.tasks import ANSWER_MARKER, Problem, render_prompt
from thinklens.tasks.protocol import model_style, problems_by_steps, token_budget

#: Display names of the token-level rows (the latent methods' come from the method table).
LABELS = {"direct": "No-CoT SFT", "cot": "CoT-SFT", "think": "Think-SFT"}


def _folder_meta(folder: Path) -> dict:
    for name in ("latent.json", "zoo.json"):
        if (folder / name).is_file():
            return json.loads((folder / name).read_text())
    return {}


@torch.no_grad()
def eval_text_model(model: Any, problems: list[Problem], style: str, *, batch_size: int = 64) -> list[dict]:
    """Greedy decoding with the core's traced generation; reasoning = tokens before ``####``."""
    marker = model.tokenizer(" " + ANSWER_MARKER, add_special_tokens=False)["input_ids"]
    out = []
    for i in range(0, len(problems), batch_size):
        chunk = problems[i:i + batch_size]
        budget = token_budget(style, max(p.n_steps for p in chunk))
        traces = model.generate([render_prompt(p, style) for p in chunk], max_new_tokens=budget, batch_size=batch_size)
        for p, tr in zip(chunk, traces):
            explicit = marker_index(tr.token_ids, marker)
            out.append({"text": tr.text, "pred": parse_answer(tr.text), "correct": parse_answer(tr.text) == p.answer,
                        "latent_steps": 0, "explicit_tokens": explicit, "reasoning_positions": explicit, "latents": []})
    return out


def table_row(name: str, problems: list[Problem], *, device: str = "cpu",
              dtype: torch.dtype = torch.float32) -> tuple[dict, list[dict]]:
    """The comparison-table row of one model (latent or token-level) on ``problems``, and its per-problem records."""
    folder = Path(resolve_model(name))
    meta = _folder_meta(folder) if folder.is_dir() else {}
    t0 = time.monotonic()
    latent = METHODS.get(meta.get("method", ""))
    if latent is not None:
        lm = load_latent_model(str(folder), device=device, dtype=dtype)
        records = lm.infer([example_from_problem(p, lm.model.tokenizer) for p in problems])
        method, label, train_s = latent.name, latent.label, meta.get("total_train_wall_s", meta.get("train_wall_s"))
        label += latent.module.label_tags(meta["config"], (meta.get("continued") or {}).get("steps"))
    else:
        model = load_hooked_model(name, device=device, dtype=dtype)
        method = model_style(str(folder) if folder.is_dir() else name)
        label = LABELS.get(method, method)
        records = eval_text_model(model, problems, method)
        train_s = meta.get("train_wall_s")
    n = len(records)
    summary = {"model": name, "method": method, "label": label,
               "accuracy": sum(r["correct"] for r in records) / n,
               "reasoning_positions": sum(r["reasoning_positions"] for r in records) / n,
               "latent_steps": sum(r["latent_steps"] for r in records) / n, "train_s": train_s, "n": n,
               "eval_s": round(time.monotonic() - t0, 1)}
    return summary, records


def add_compression(rows: list[dict]) -> None:
    """``compression`` = CoT-SFT reasoning positions / the row's (None without a CoT row or for 0)."""
    cot = next((r for r in rows if r["method"] == "cot"), None)
    for r in rows:
        r["compression"] = (round(cot["reasoning_positions"] / r["reasoning_positions"], 2)
                            if cot and r["reasoning_positions"] > 0 else None)


def seek_problems(model: Any, problems: list[Problem], cfg: LatentSeekConfig, run: RunFolder | None = None,
                  progress: Progress | None = None) -> list[SeekResult]:
    """LatentSeek on every problem (resumable per problem through the run folder's progress log)."""
    reward = load_reward(cfg.reward)
    done = run.finished() if run is not None else {}
    results = []
    for i, p in enumerate((progress or Progress(False)).iter(problems, desc="latentseek", total=len(problems))):
        key = f"p{i:05d}"
        if key in done:
            results.append(seek_from_json(done[key]))
            continue
        prompt = model.tokenizer(render_prompt(p, "cot"))["input_ids"]
        gen = torch.Generator().manual_seed(cfg.seed * 100_003 + i)
        res = latent_seek(model, prompt, p.answer, cfg, reward, generator=gen)
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
    return {
        "n": len(results), "cot_accuracy": sum(r.original_correct for r in results) / len(results),
        "seek_accuracy": sum(r.final_correct for r in results) / len(results),
        "accuracy_by_budget": accuracy_by_budget(results, cfg.max_iters),
        "mean_iterations": sum(len(r.iterations) for r in results) / len(results),
        "mean_flipped": sum(it.flipped for it in flat) / len(flat) if flat else 0.0,
        "mean_delta_norm": sum(it.delta_norm for it in flat) / len(flat) if flat else 0.0,
        "mean_optimised": sum(r.n_optimised for r in results) / len(results),
        "mean_tokens": sum(r.n_tokens for r in results) / len(results),
    }


def run_seek(model: Any, cfg: LatentSeekConfig, run: RunFolder, *, progress: Progress | None = None) -> dict:
    """The ``latent-seek`` job: LatentSeek on held-out problems; writes results/seek.json and the budget figure."""
    from latent import figures

    results = seek_problems(model, problems_by_steps(cfg.n, cfg.min_steps, cfg.max_steps, seed=cfg.seed), cfg, run, progress)
    summary = seek_summary(results, cfg)
    run.write_result("seek", {"config": cfg, "summary": summary, "problems": [seek_to_json(r) for r in results]})
    run.write_figure("seek_budget", figures.figure_seek_budget(summary["accuracy_by_budget"], cfg.reward))
    run.finish({"cot_accuracy": summary["cot_accuracy"], "seek_accuracy": summary["seek_accuracy"]})
    return summary


def run_table(cfg: EvalConfig, run: RunFolder, *, seek: LatentSeekConfig | None = None, progress: Progress | None = None,
              device: str = "cpu", dtype: torch.dtype = torch.float32) -> dict:
    """Evaluate every model, add LatentSeek rows, write table/decoding/seek results and figures."""
    from latent import figures

    progress = progress or Progress(False)
    problems = problems_by_steps(cfg.n, cfg.min_steps, cfg.max_steps, seed=cfg.seed)
    rows, decoding = [], []
    by_model: dict[str, list[dict]] = {}
    names = cfg.names()
    for name in progress.iter(names, desc="models", total=len(names)):
        summary, records = table_row(name, problems, device=device, dtype=dtype)
        summary["problems"] = f"{cfg.min_steps}-{cfg.max_steps} steps"
        rows.append(summary)
        by_model[name] = records
    add_compression(rows)
    for i, p in enumerate(problems[: cfg.decode_examples]):
        decoding.append({"question": p.question, "answer": p.answer, "cot": p.cot, "steps": p.n_steps,
                         "methods": {name: {"text": recs[i]["text"], "correct": recs[i]["correct"], "latents": recs[i]["latents"]}
                                     for name, recs in by_model.items()}})
    out: dict[str, Any] = {"rows": rows}
    cot_row = next((r for r in rows if r["method"] == "cot"), None)
    if cfg.seek_n and cot_row is not None:
        scfg = seek or LatentSeekConfig(model=cot_row["model"], min_steps=cfg.seek_min_steps, max_steps=cfg.seek_max_steps,
                                        n=cfg.seek_n, seed=cfg.seek_seed, lr=cfg.seek_lr)
        model = load_hooked_model(scfg.model, device=device, dtype=dtype)
        hard = problems_by_steps(scfg.n, scfg.min_steps, scfg.max_steps, seed=scfg.seed)
        t0 = time.monotonic()
        results = seek_problems(model, hard, scfg, run, progress)
        summary = seek_summary(results, scfg)
        summary["eval_s"] = round(time.monotonic() - t0, 1)
        tokens = sum(r.n_tokens for r in results) / len(results)
        label = f"{scfg.min_steps}-{scfg.max_steps} steps"
        rows.append({"model": scfg.model, "method": "cot", "label": "CoT-SFT (hard)", "problems": label,
                     "accuracy": summary["cot_accuracy"], "reasoning_positions": tokens, "latent_steps": 0,
                     "train_s": cot_row["train_s"], "n": len(results), "compression": 1.0})
        rows.append({"model": scfg.model, "method": "latentseek", "label": f"CoT + LatentSeek({scfg.reward.upper()})",
                     "problems": label, "accuracy": summary["seek_accuracy"], "reasoning_positions": tokens,
                     "latent_steps": 0, "train_s": 0.0, "n": len(results), "compression": 1.0,
                     "mean_iterations": summary["mean_iterations"]})
        out["seek"] = {"config": scfg, "summary": summary}
        run.write_result("seek", {"config": scfg, "summary": summary, "problems": [seek_to_json(r) for r in results]})
        run.write_figure("seek_budget", figures.figure_seek_budget(summary["accuracy_by_budget"], scfg.reward))
    run.write_result("table", rows)
    run.write_result("decoding", decoding)
    run.write_figure("accuracy", figures.figure_accuracy(rows))
    run.finish({"rows": [{"label": r["label"], "accuracy": round(r["accuracy"], 3)} for r in rows]})
    return out


def format_table(rows: list[dict]) -> str:
    """A markdown table of the comparison rows.

    Example:
        >>> print(format_table([{"label": "CODI", "problems": "3-4 steps", "accuracy": 0.9, "reasoning_positions": 6.0,
        ...                      "compression": 4.1, "train_s": 300.0, "n": 200}]))
        | method | problems | accuracy | reasoning positions | compression vs CoT | train time (s) | n |
        |---|---|---|---|---|---|---|
        | CODI | 3-4 steps | 90.0% | 6.0 | 4.1x | 300 | 200 |
    """
    lines = ["| method | problems | accuracy | reasoning positions | compression vs CoT | train time (s) | n |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        comp = f"{r['compression']:.1f}x" if r.get("compression") else "-"
        train = f"{r['train_s']:.0f}" if r.get("train_s") is not None else "-"
        lines.append(f"| {r['label']} | {r['problems']} | {100 * r['accuracy']:.1f}% | {r['reasoning_positions']:.1f} | "
                     f"{comp} | {train} | {r['n']} |")
    return "\n".join(lines)
