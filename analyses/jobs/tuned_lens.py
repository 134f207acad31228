"""``thinklens run tuned-lens``: a tuned lens (Belrose et al. 2023, arXiv 2303.08112) trained on the model's own text,
measured against the logit lens on held-out text, and the answer read along traces through both lenses.

The model completes problems (the synthetic task, or ``--data``) in its own format, sampled at ``--temperature``; the
first ``--n-train`` completions train one affine translator per block (identity-initialised, fit to the model's final
output distribution by KL), the next ``--n-eval`` measure each lens's KL to that output per block (their tokens'
mean per text; intervals over texts). ``--texts FILE`` trains and measures on a provided text set instead (rows with
a ``text`` field). Then ``--n-traces`` greedy traces are read at every step and block: the first step, and at it the
lowest block, where the final answer's first token is the lens's top token, per lens. The run folder holds the lens
(``lens/``: safetensors and JSON; :func:`thinklens.analyses.lens.translators.load_lens` loads it by the run or by the
model's name), ``results/kl_by_layer.json``, ``results/training.json``, ``results/answer_lens.json`` (the first
top-1 per trace; the grids in ``answer_lens_grids.json``) and the figures ``kl_by_layer`` and ``answer_lens``.
Findings: :mod:`thinklens.analyses.lens.lens_findings`; planted and null settings:
:mod:`thinklens.analyses.lens.validation`.

Example:
    >>> JOB.name, JOB.config.__name__
    ('tuned-lens', 'TunedLensConfig')
    >>> cfg = TunedLensConfig(model="smollm2-135m", n_train=8)
    >>> cfg.n_train, cfg.sampled, cfg.texts
    (8, True, '')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinklens.data.problemsets import DataOptions, SamplingOptions
from thinklens.engine.training import OptimOptions
from thinklens.errors import ThinklensError, opt
from thinklens.runs.folders import atomic_write_json, to_jsonable
from thinklens.runs.jobs import Job, JobContext
from thinklens.tasks import StepRange

STAGES = ("texts", "train", "eval", "traces")
GRIDS = "answer_lens_grids.json"
"""The run folder's file of the traces' (step, block) grids per lens (the figure's data; results/answer_lens.json holds
the first top-1 per trace)."""


@dataclass(frozen=True)
class TunedLensConfig(DataOptions, StepRange, SamplingOptions, OptimOptions):
    """Settings of ``thinklens run tuned-lens`` (one option per field)."""

    model: str = "tiny-r1"
    """The model: zoo name, packaged real model (smollm2-135m), local model folder or hub id."""
    seed: int = 0
    """Seed of the sampled completions, the training order and the intervals."""
    texts: str = ""
    """A provided text set to train and measure on instead of the model's own completions: a .jsonl/.json/.parquet/.csv
    file or datasets folder whose rows have a text field (the first --n-train rows train, the next --n-eval measure)."""
    n_train: int = 16
    """Problems whose completions (or texts) train the translators."""
    n_eval: int = 12
    """Held-out problems evaluated: the texts whose KL per block is measured (the units of every interval)."""
    max_new_tokens: int = 48
    """New tokens of each completion the lens trains and is measured on."""
    temperature: float = 1.0
    """Sampling temperature of the completions (1: the model's own distribution; 0: greedy)."""
    batch_size: int = 16
    """Completions generated at once."""
    epochs: int = 2
    """Passes over the training tokens."""
    batch_tokens: int = 32
    """Tokens per optimizer step (every block's translator sees each of them)."""
    shuffle_targets: bool = False
    """Fit each token to another token's final distribution (the null control: translators that can learn nothing)."""
    n_traces: int = 4
    """Greedy traces read along every step and block for the answer's token (0: none)."""
    trace_tokens: int = 160
    """New tokens of each trace read along."""

    def check(self) -> None:
        if min(self.n_train, self.n_eval, self.max_new_tokens, self.batch_size, self.epochs, self.batch_tokens) < 1 \
                or self.n_traces < 0 or self.trace_tokens < 1:
            raise ThinklensError.of("n_train / n_eval / max_new_tokens / batch_size / epochs / batch_tokens / n_traces / trace_tokens",
                                    (self.n_train, self.n_eval, self.max_new_tokens, self.batch_size, self.epochs,
                                     self.batch_tokens, self.n_traces, self.trace_tokens),
                                    "n_traces >= 0 and the others >= 1", f"pass e.g. {opt('n_train', 16)} {opt('n_eval', 12)}")


def _texts_rows(config: TunedLensConfig, model: Any) -> dict[str, Any]:
    """Token rows of the training and held-out texts, and where each row's kept tokens start."""
    from thinklens.analyses.lens.lens_training import own_texts, text_rows  # lazy: CLI start-up (torch)
    from thinklens.data.formats import format_for  # lazy: CLI start-up (torch)

    n = config.n_train + config.n_eval
    if config.texts:
        from thinklens.data.sources import read_rows  # lazy: CLI start-up (torch)

        rows_in, _ = read_rows(config.texts)
        texts = [r["text"] for r in rows_in if isinstance(r.get("text"), str) and r["text"].strip()]
        rows = text_rows(model.tokenizer, texts)[:n]
        if len(rows) < n:
            raise ThinklensError.of("texts", f"{len(rows)} texts of 2+ tokens in {config.texts}",
                                    f"at least {n} ({opt('n_train')} + {opt('n_eval')})",
                                    f"pass fewer ({opt('n_train')}, {opt('n_eval')}) or more texts")
        starts = [1] * n
        source = config.texts
    else:
        problems = list(config.problems(n + config.n_traces, seed=config.seed))
        if len(problems) < n:
            raise ThinklensError.of("problems", len(problems), f"at least {n} ({opt('n_train')} + {opt('n_eval')})",
                                    f"pass more {opt('data')}")
        fmt = format_for(model, config.prompt_format)
        prompts = fmt.render_problems(problems[:n], model.tokenizer)
        rows, starts = own_texts(model, prompts, max_new_tokens=config.max_new_tokens, seed=config.seed,
                                 temperature=config.temperature, top_p=config.top_p, batch_size=config.batch_size)
        source = f"{model.name}'s completions ({fmt.name} format) of {config.data or 'the synthetic task'}"
    return {"rows": rows, "starts": starts, "source": source}


def _traces(config: TunedLensConfig, model: Any, lens: Any) -> list[dict[str, Any]]:
    """The answer read along ``n_traces`` greedy traces through both lenses (problems after the texts' own)."""
    from thinklens.analyses.lens.along_trace import answer_target, read_along, trace_states  # lazy: CLI start-up (torch)
    from thinklens.data.formats import format_for  # lazy: CLI start-up (torch)

    n = config.n_train + config.n_eval
    problems = list(config.problems(n + config.n_traces, seed=config.seed))[n:]
    if not problems:
        return []
    fmt = format_for(model, config.prompt_format)
    prompts = fmt.render_problems(problems, model.tokenizer)
    traces = model.generate(prompts, max_new_tokens=config.trace_tokens, capture=["resid_post.*"], batch_size=config.batch_size)
    out = []
    for p, tr in zip(problems, traces):
        row: dict[str, Any] = {"problem": p.id, "gold": p.answer, "text": tr.text, "answer_step": None}
        hit = answer_target(tr)
        if hit is not None:
            target, step = hit
            states = trace_states(tr, model.n_layers)
            reads = {name: read_along(model, states, target, lens=le, tokens=tr.tokens, steps=step + 1)
                     for name, le in (("logit", None), ("tuned", lens))}
            row.update(answer_step=step, target=reads["logit"].target_text, first={k: v.first for k, v in reads.items()},
                       reads={k: v.to_dict() for k, v in reads.items()})
        out.append(row)
    return out


def run(config: TunedLensConfig, ctx: JobContext) -> dict[str, Any]:
    """Every stage not yet done (texts, train, eval, traces); returns the summary written to meta.json."""
    import numpy as np  # lazy: CLI start-up (torch)
    import torch  # lazy: CLI start-up (torch)

    from thinklens.analyses.lens.figures import figure_answer_lens, figure_kl_by_layer  # lazy: CLI start-up (torch)
    from thinklens.analyses.lens.lens_findings import layer_table, lens_findings  # lazy: CLI start-up (torch)
    from thinklens.analyses.lens.lens_training import collect_states, kl_by_layer, per_text, train_translators  # lazy: CLI start-up (torch)
    from thinklens.analyses.lens.translators import LENS_FOLDER, TunedLens  # lazy: CLI start-up (torch)
    from thinklens.calibration.findings import findings_doc  # lazy: CLI start-up (torch)

    model, folder = ctx.model, ctx.run.path
    log = ctx.progress.log if ctx.progress.enabled else None
    lens_dir = folder / LENS_FOLDER
    for stage in ctx.run.pending(STAGES):
        if stage == "texts":
            atomic_write_json(folder / "texts.json", to_jsonable(_texts_rows(config, model)))
        texts = json.loads((folder / "texts.json").read_text())
        rows, starts, k = texts["rows"], texts["starts"], config.n_train
        if stage == "train":
            train = collect_states(model, rows[:k], starts[:k], batch_size=config.batch_size)
            lens, record = train_translators(model, train, epochs=config.epochs, batch_tokens=config.batch_tokens, lr=config.lr,
                                             weight_decay=config.weight_decay, grad_clip=config.grad_clip, seed=config.seed,
                                             shuffle_targets=config.shuffle_targets, log=log)
            lens.cpu().save(lens_dir, trained_on=texts["source"], tokens=record.tokens, steps=record.steps,
                            shuffled_targets=config.shuffle_targets, run=str(folder))
            ctx.run.write_result("training", {"tokens": record.tokens, "steps": record.steps, "loss": record.loss,
                                              "shuffled_targets": record.shuffled_targets})
        elif stage == "eval":
            lens = TunedLens.load(lens_dir).to(model.device)
            held = collect_states(model, rows[k:], starts[k:], batch_size=config.batch_size)
            kl = kl_by_layer(model, held, {"logit": None, "tuned": lens})
            by_text = {name: per_text(v, held.text, held.n_texts).tolist() for name, v in kl.items()}  # [text, layer]
            ctx.run.write_result("kl_by_layer", {"logit": by_text["logit"], "tuned": by_text["tuned"], "tokens": len(held),
                                                 "texts": held.n_texts})
        elif stage == "traces":
            lens = TunedLens.load(lens_dir).to(model.device)
            with torch.no_grad():
                rows = to_jsonable(_traces(config, model, lens))
            atomic_write_json(folder / GRIDS, [{"problem": r["problem"], "reads": r.get("reads")} for r in rows])
            ctx.run.write_result("answer_lens", [{k: v for k, v in r.items() if k != "reads"} for r in rows])
        ctx.run.mark_done(stage)
        if log is not None:
            log(f"stage done: {stage}")
    kl = ctx.run.read_result("kl_by_layer")
    logit, tuned = np.asarray(kl["logit"]), np.asarray(kl["tuned"])
    traces = ctx.run.read_result("answer_lens")
    table = layer_table(logit, tuned, seed=config.seed)
    findings = lens_findings(logit, tuned, model=config.model, traces=traces, seed=config.seed)
    training = ctx.run.read_result("training")
    summary = {"model": config.model, "source": json.loads((folder / "texts.json").read_text())["source"],
               "n_train": config.n_train, "n_eval": kl["texts"], "train_tokens": training["tokens"],
               "eval_tokens": kl["tokens"], "steps": training["steps"], "shuffled_targets": config.shuffle_targets,
               "final_train_kl": training["loss"][-1], "layers": table, "lens": str(lens_dir),
               "traces": [{k: t.get(k) for k in ("problem", "gold", "answer_step", "target", "first")} for t in traces],
               "findings": findings_doc(findings)}
    ctx.run.write_figure("kl_by_layer", figure_kl_by_layer(table, title=f"{config.model}: KL to the final output per block "
                                                                         f"({kl['texts']} held-out texts)"))
    grids = json.loads((folder / GRIDS).read_text())
    read = next((t for t in grids if t.get("reads")), None)
    if read is not None:
        from thinklens.analyses.lens.along_trace import AnswerLens  # lazy: CLI start-up (torch)

        res = [AnswerLens(**{**r, "first": tuple(r["first"]) if r["first"] else None}) for r in read["reads"].values()]
        target = res[0].target_text
        ctx.run.write_figure("answer_lens", figure_answer_lens(*res, title=f"{config.model}, {read['problem']}: the answer's "
                                                                             f"token {target!r} along the trace"))
    summary = to_jsonable(summary)
    ctx.run.finish(summary)
    return summary


def report(summary: dict[str, Any]) -> str:
    """The headline numbers the CLI prints after the run folder."""
    lines = [f"{summary['model']}: tuned lens trained on {summary['train_tokens']} tokens ({summary['steps']} steps"
             f"{', shuffled targets' if summary['shuffled_targets'] else ''}), measured on {summary['eval_tokens']} tokens "
             f"of {summary['n_eval']} held-out texts; lens in {summary['lens']}",
             "block  logit KL [95% CI]        tuned KL [95% CI]        reduction [95% CI]"]
    for r in summary["layers"]:
        lines.append(f"{r['layer']:>5}  {r['logit_kl']:7.3f} [{r['logit_ci'][0]:.3f}, {r['logit_ci'][1]:.3f}]  "
                     f"{r['tuned_kl']:7.3f} [{r['tuned_ci'][0]:.3f}, {r['tuned_ci'][1]:.3f}]  "
                     f"{r['reduction']:7.3f} [{r['reduction_ci'][0]:.3f}, {r['reduction_ci'][1]:.3f}]")
    for t in summary["traces"]:
        first = t.get("first") or {}
        where = ", ".join(f"{k} {'step %d block %d' % tuple(v) if v else 'never'}" for k, v in first.items())
        lines.append(f"trace {t['problem']}: " + (f"answer token {t['target']!r} written at step {t['answer_step']}; top-1 "
                                                  f"first: {where}" if t["answer_step"] is not None else "no final answer"))
    return "\n".join(lines)


def headline(summary: dict, folder: Path) -> str:
    """The run in a line: the every-block finding, never more than its verdict.

    Example:
        >>> headline({"model": "m", "n_eval": 12, "findings": [{"verdict": "no effect", "value": -0.1}]}, Path("."))
        'm: tuned lens not shown below the logit lens at every block (no effect; 12 held-out texts)'
    """
    f = (summary.get("findings") or [{}])[0]
    if f.get("verdict") == "effect":
        return (f"{summary.get('model')}: tuned lens below the logit lens at every block (by {f.get('value'):.3g} nats "
                f"at the closest; {summary.get('n_eval')} held-out texts)")
    return (f"{summary.get('model')}: tuned lens not shown below the logit lens at every block ({f.get('verdict')}; "
            f"{summary.get('n_eval')} held-out texts)")


JOB = Job("tuned-lens", TunedLensConfig, run, report=report, headline=headline, order=35, page="pages/5_Trace_viewer.py",
          help="logit and tuned lens (Belrose et al. 2023): held-out KL per block, the answer along traces",
          findings="thinklens.analyses.lens.lens_findings:lens_findings", capability="Lenses",
          validations={"tuned-lens": "thinklens.analyses.lens.validation:SETTINGS"},
          smallest=("--model", "tiny-r1", "--n-train", "2", "--n-eval", "2", "--max-new-tokens", "12", "--epochs", "1",
                    "--n-traces", "1", "--trace-tokens", "40"))
