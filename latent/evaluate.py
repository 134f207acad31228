"""The comparison table (No-CoT, CoT-SFT, Coconut, CODI, Latent-SFT, CoT + LatentSeek) of the ``latent-eval`` job.

Every model answers the same problems: held-out synthetic ones, or the first ``--n`` of any ``--data``
source. A latent model (its folder has latent.json) is prompted in the format it was trained in; a
token-level model in ``--prompt-format`` (``auto``: a zoo model's own style, else its chat template, else
plain). Every accuracy is :func:`thinklens.data.answers.is_correct` against the gold answer. Reasoning positions
are the explicit tokens before the answer (zoo styles: before ``####``; a thinking span: the tokens inside it;
else: before the answer line) plus the latent steps; compression is the CoT row's mean reasoning positions
divided by a method's.

Example:
    >>> # run = RunFolder.create("latent-eval", EvalConfig(), run_id="table")
    >>> # table = run_table(EvalConfig(n_eval=100), run)     # writes results/table.json, decoding.json, seek.json
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from thinklens.data.answers import is_correct
from thinklens.data.formats import format_for
from thinklens.generation.budgets import budgets_for, new_token_budget
from thinklens.latent import figures
from thinklens.latent.config import EvalConfig, LatentSeekConfig
from thinklens.latent.examples import gold_of, n_steps_of, problem_record
from thinklens.latent.latent_findings import add_intervals, table_findings, training_of
from thinklens.latent.latent_model import (
    load_hooked_model,
    load_latent_model,
    marker_index,
    predicted_answer,
    resolve_model,
    saved_prompt_format,
)
from thinklens.latent.methods import METHODS
from thinklens.latent.seek_runs import seek_problem_list, seek_problems, seek_summary, seek_to_json
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import Progress
from thinklens.tasks import ANSWER_MARKER
from thinklens.tasks.protocol import problems_by_steps

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.generation.trace import Trace

#: Display names of the token-level rows in the zoo's styles (the latent methods' come from the method table).
LABELS = {"direct": "No-CoT SFT", "cot": "CoT-SFT", "think": "Think-SFT"}
# Where an answer starts in an output without a thinking span (the markers extract_answer reads).
_ANSWER_START = re.compile(r"####|\\boxed|\bfinal answer\b|\bthe answer is\b", re.IGNORECASE)


def _folder_meta(folder: Path) -> dict:
    for name in ("latent.json", "zoo.json"):
        if (folder / name).is_file():
            return json.loads((folder / name).read_text())
    return {}


def lineage_train_s(name: str, resolve: Callable[[str], str | Path] | None = None) -> float | None:
    """Wall-clock training seconds of a model and of every model it was trained from, back to (not including) the
    root init they share (tiny-pre for the zoo): what a row's training really cost. A latent model's parent is its
    ``parent`` (the token-level model its first run started from), else its start model; a zoo model's is its
    ``init``. None when a time on the chain is unknown. ``resolve`` finds a name's folder (default: the core's model
    resolution; results/collect.py passes one that stays inside the checkout it rebuilds from).

    Example:
        >>> lineage_train_s("org/not-a-local-model") is None
        True
    """
    folder = Path((resolve or resolve_model)(name))
    meta = _folder_meta(folder) if folder.is_dir() else {}
    if not meta:
        return None
    own = meta.get("total_train_wall_s", meta.get("train_wall_s"))
    parent = meta.get("init") if "method" not in meta else meta.get("parent") or (meta.get("start_model") or {}).get("name")
    if own is None:
        return None
    if not parent:
        return 0.0  # the root init: shared by every row, so not counted
    before = lineage_train_s(parent, resolve)
    return None if before is None else round(own + before, 1)


def tokens_before_answer(tokens: list[str]) -> int:
    """How many leading tokens (as decoded strings) come before the answer line, e.g. ``The answer is: 18``.

    Example:
        >>> tokens_before_answer(["<<", "2+3=5", ">>", " The", " answer", " is", ":", " 5"])
        3
    """
    m = _ANSWER_START.search("".join(tokens))
    if m is None:
        return len(tokens)
    end = 0
    for i, t in enumerate(tokens):
        end += len(t)
        if end > m.start():
            return i
    return len(tokens)


def reasoning_tokens(trace: "Trace", fmt: "PromptFormat") -> int:
    """The explicit reasoning of an output in a format outside the zoo's: the tokens inside the thinking span,
    or (no span) the tokens before the answer line."""
    if fmt.span is not None:
        return len(fmt.split_trace(trace).reasoning)
    return tokens_before_answer(list(trace.tokens))


@torch.no_grad()
def eval_text_model(model: Any, problems: list, fmt: "PromptFormat", *, max_new_tokens: int = 0,
                    batch_size: int = 64) -> list[dict]:
    """Greedy decoding with the core's traced generation, graded by ``is_correct``; reasoning as in the module doc."""
    marker = model.tokenizer(" " + ANSWER_MARKER, add_special_tokens=False)["input_ids"]
    out = []
    for i in range(0, len(problems), batch_size):
        chunk = problems[i:i + batch_size]
        prompts = fmt.render_problems(chunk, model.tokenizer)
        # each prompt its own budget inside the context (a long prompt does not cut its batch-mates)
        budget = list(budgets_for(model, prompts, new_token_budget(
            fmt, max_new_tokens or None, max_steps=max(n_steps_of(p) for p in chunk))).per_prompt)
        traces = model.generate(prompts, max_new_tokens=budget, batch_size=batch_size)
        for p, tr in zip(chunk, traces):
            explicit = marker_index(tr.token_ids, marker) if fmt.is_zoo else reasoning_tokens(tr, fmt)
            out.append({"text": tr.text, "pred": predicted_answer(tr.text), "correct": is_correct(tr.text, gold_of(p)),
                        "latent_steps": 0, "explicit_tokens": explicit, "reasoning_positions": explicit, "latents": []})
    return out


def unique_labels(rows: list[dict]) -> None:
    """Make the rows' labels unique in place: rows that share a label get their model's folder name after it, and a
    count where the same folder is listed twice.

    Example:
        >>> rows = [{"label": "CODI", "model": "runs/a/codi-6"}, {"label": "CODI", "model": "data/zoo/codi-12"},
        ...         {"label": "No-CoT", "model": "x"}, {"label": "No-CoT", "model": "x"}]
        >>> unique_labels(rows); [r["label"] for r in rows]
        ['CODI [codi-6]', 'CODI [codi-12]', 'No-CoT [x #1]', 'No-CoT [x #2]']
    """
    labels = Counter(r["label"] for r in rows)
    named = Counter((r["label"], Path(str(r["model"])).name) for r in rows)
    seen: Counter = Counter()
    for r in rows:
        if labels[r["label"]] > 1:
            key = (r["label"], Path(str(r["model"])).name)
            seen[key] += 1
            r["label"] = f"{key[0]} [{key[1]}{f' #{seen[key]}' if named[key] > 1 else ''}]"


def table_row(name: str, problems: list, *, prompt_format: str = "auto", max_new_tokens: int = 0, device: str = "cpu",
              dtype: torch.dtype = torch.float32, explicit: bool = False) -> tuple[dict, list[dict]]:
    """The comparison-table row of one model (latent or token-level) on ``problems``, and its per-problem records.

    ``explicit``: a latent model's LM as a token-level model in the format it was trained in (no latents)."""
    folder = Path(resolve_model(name))
    meta = _folder_meta(folder) if folder.is_dir() else {}
    t0 = time.monotonic()
    latent = METHODS.get(meta.get("method", ""))
    if latent is not None and explicit:
        model = load_hooked_model(name, device=device, dtype=dtype)
        fmt = format_for(model, saved_prompt_format(meta))
        method, label = "explicit", f"{latent.label} in explicit-CoT mode" + latent.module.label_tags(
            meta["config"], (meta.get("continued") or {}).get("steps"))
        records = eval_text_model(model, problems, fmt, max_new_tokens=max_new_tokens)
    elif latent is not None:
        lm = load_latent_model(str(folder), device=device, dtype=dtype)
        records = lm.infer_problems(problems)
        method, label = latent.name, latent.label
        label += latent.module.label_tags(meta["config"], (meta.get("continued") or {}).get("steps"))
    else:
        model = load_hooked_model(name, device=device, dtype=dtype)
        fmt = format_for(model, prompt_format)
        # a token-level model outside the zoo's styles is the CoT row its latent siblings compress
        method = fmt.name if fmt.is_zoo else "cot"
        # the model's name in the label: a No-CoT row is only the matched baseline when the reader can see which it is
        label = f"{LABELS[fmt.name]} ({folder.name})" if fmt.is_zoo else f"{folder.name} ({fmt.name})"
        records = eval_text_model(model, problems, fmt, max_new_tokens=max_new_tokens)
    train_s = lineage_train_s(name) if meta else None
    own = meta.get("total_train_wall_s", meta.get("train_wall_s")) if meta else None
    n = len(records)
    summary = {"model": name, "method": method, "label": label,
               "accuracy": sum(r["correct"] for r in records) / n,
               "reasoning_positions": sum(r["reasoning_positions"] for r in records) / n,
               "latent_steps": sum(r["latent_steps"] for r in records) / n, "train_s": train_s,
               "own_train_s": None if own is None else round(float(own), 1), "n": n,
               "eval_s": round(time.monotonic() - t0, 1)}
    if method == "sft" and not meta["config"].get("cot", True):  # an answer-only SFT baseline: a No-CoT control
        summary["no_cot"] = True
    summary["training"] = training_of(meta) if meta else None  # whether a No-CoT row is matched to a method's
    return summary, records


def table_problems(cfg: EvalConfig) -> tuple[list, str]:
    """The table's problems and how the table names them (``3-4 steps``, or the data set's file name)."""
    if cfg.data:
        return list(cfg.load(limit=cfg.n_eval)), Path(cfg.data.split("@")[0]).name or cfg.data
    return problems_by_steps(cfg.n_eval, cfg.min_steps, cfg.max_steps, seed=cfg.seed), f"{cfg.min_steps}-{cfg.max_steps} steps"


def add_compression(rows: list[dict]) -> None:
    """``compression`` = CoT-SFT reasoning positions / the row's (None without a CoT row or for 0)."""
    cot = next((r for r in rows if r["method"] == "cot"), None)
    for r in rows:
        r["compression"] = (round(cot["reasoning_positions"] / r["reasoning_positions"], 2)
                            if cot and r["reasoning_positions"] > 0 else None)


def run_table(cfg: EvalConfig, run: RunFolder, *, seek: LatentSeekConfig | None = None, progress: Progress | None = None,
              device: str = "cpu", dtype: torch.dtype = torch.float32) -> dict:
    """Evaluate every model, add LatentSeek rows, write table/decoding/seek results and figures."""
    progress = progress or Progress(False)
    problems, where = table_problems(cfg)
    rows, decoding = [], []
    by_model: dict[str, list[dict]] = {}
    names = cfg.names()
    todo = [(name, False) for name in names] + [(name, True) for name in cfg.explicit]
    for name, explicit in progress.iter(todo, desc="models", total=len(todo)):
        summary, records = table_row(name, problems, prompt_format=cfg.prompt_format, max_new_tokens=cfg.max_new_tokens,
                                     device=device, dtype=dtype, explicit=explicit)
        summary["problems"] = where
        rows.append(summary)
        by_model[name + (" (explicit CoT)" if explicit else "")] = records
    add_compression(rows)
    unique_labels(rows)  # findings are keyed by label: two models under one label would mix their problems
    for i, p in enumerate(problems[: cfg.decode_examples]):
        decoding.append({**problem_record(p),
                         "methods": {name: {"text": recs[i]["text"], "correct": recs[i]["correct"], "latents": recs[i]["latents"]}
                                     for name, recs in by_model.items()}})
    out: dict[str, Any] = {"rows": rows}
    cot_row = next((r for r in rows if r["method"] == "cot"), None)
    if cfg.seek_n and cot_row is not None:
        scfg = seek or LatentSeekConfig(model=cot_row["model"], data=cfg.data, data_fields=cfg.data_fields,
                                        prompt_format=cfg.prompt_format, min_steps=cfg.seek_min_steps,
                                        max_steps=cfg.seek_max_steps, n_eval=cfg.seek_n, seed=cfg.seek_seed, lr=cfg.seek_lr,
                                        reward=cfg.seek_reward, max_new_tokens=cfg.max_new_tokens)
        model = load_hooked_model(scfg.model, device=device, dtype=dtype)
        t0 = time.monotonic()
        results = seek_problems(model, seek_problem_list(scfg), scfg, run, progress)
        summary = seek_summary(results, scfg)
        summary["eval_s"] = round(time.monotonic() - t0, 1)
        tokens = sum(r.n_tokens for r in results) / len(results)
        label = where if scfg.data else f"{scfg.min_steps}-{scfg.max_steps} steps"
        base = "CoT-SFT (hard)" if not scfg.data else f"{cot_row['label']} (LatentSeek problems)"
        rows.append({"model": scfg.model, "method": "cot", "label": base, "problems": label,
                     "accuracy": summary["cot_accuracy"], "reasoning_positions": tokens, "latent_steps": 0,
                     "train_s": cot_row["train_s"], "n": len(results), "compression": 1.0})
        rows.append({"model": scfg.model, "method": "latentseek", "label": f"CoT + LatentSeek({scfg.reward.upper()})",
                     "problems": label, "accuracy": summary["seek_accuracy"], "reasoning_positions": tokens,
                     "latent_steps": 0, "train_s": 0.0, "n": len(results), "compression": 1.0,
                     "mean_iterations": summary["mean_iterations"]})
        for t, b in summary["baseline"].items():  # the oracle best-of-N that a gold-answer reward implies
            if b:
                rows.append({"model": scfg.model, "method": "best_of_n", "label": f"CoT, oracle best-of-{b['samples']} "
                             f"sampling (T={t})", "problems": label, "accuracy": b["best_of_n"],
                             "reasoning_positions": tokens, "latent_steps": 0, "train_s": 0.0, "n": b["n"],
                             "compression": 1.0})
        out["seek"] = {"config": scfg, "summary": summary}
        run.write_result("seek", {"config": scfg, "summary": summary, "problems": [seek_to_json(r) for r in results]})
        run.write_figure("seek_budget", figures.figure_seek_budget(summary["accuracy_by_budget"], scfg.reward, summary["baseline"]))
    add_intervals(rows)
    correct = {r["label"]: [rec["correct"] for rec in recs] for r, recs in zip(rows, by_model.values())}
    seek_doc = None
    if "seek" in out:
        seek_doc = {"original_correct": [r.original_correct for r in results], "final_correct": [r.final_correct for r in results],
                    "baseline": out["seek"]["summary"]["baseline"]}
    out["findings"] = table_findings(rows, correct, seek=seek_doc)
    run.write_result("table", rows)
    run.write_result("decoding", decoding)
    run.write_figure("accuracy", figures.figure_accuracy(rows))
    run.finish({"rows": [{"label": r["label"], "problems": r["problems"], "accuracy": round(r["accuracy"], 3),
                          "ci": [round(x, 3) for x in r["ci"]], "n": r["n"]} for r in rows],
                "findings": out["findings"]})
    return out


def format_table(rows: list[dict]) -> str:
    """A markdown table of the comparison rows.

    Example:
    Rows are grouped by problem set (in first-seen order), each accuracy with its Wilson 95% interval. Training
    time is one source (the models' latent.json / zoo.json wall-clock seconds): the whole lineage, the row's own
    run first when it has parents (``own + parents``), so a training run's page and the table never disagree.

    Example:
        >>> print(format_table([{"label": "CODI", "problems": "3-4 steps", "accuracy": 0.9, "reasoning_positions": 6.0,
        ...                      "compression": 4.1, "train_s": 300.0, "own_train_s": 100.0, "n": 200, "ci": [0.851, 0.934]}]))
        | method | problems | accuracy [95% CI] | reasoning positions | compression vs CoT | train time (s), own + parents | n |
        |---|---|---|---|---|---|---|
        | CODI | 3-4 steps | 90.0% [85.1, 93.4] | 6.0 | 4.1x | 300 (100 + 200) | 200 |
    """
    lines = ["| method | problems | accuracy [95% CI] | reasoning positions | compression vs CoT | train time (s), own + parents | n |",
             "|---|---|---|---|---|---|---|"]
    order = list(dict.fromkeys(r["problems"] for r in rows))
    for r in sorted(rows, key=lambda r: order.index(r["problems"])):
        comp = f"{r['compression']:.1f}x" if r.get("compression") else "-"
        train = f"{r['train_s']:.0f}" if r.get("train_s") is not None else "-"
        own = r.get("own_train_s")
        if r.get("train_s") is not None and own is not None and r["train_s"] - own > 0.5:
            train += f" ({own:.0f} + {r['train_s'] - own:.0f})"
        ci = f" [{100 * r['ci'][0]:.1f}, {100 * r['ci'][1]:.1f}]" if r.get("ci") else ""
        lines.append(f"| {r['label']} | {r['problems']} | {100 * r['accuracy']:.1f}%{ci} | {r['reasoning_positions']:.1f} | "
                     f"{comp} | {train} | {r['n']} |")
    return "\n".join(lines)
