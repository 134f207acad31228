"""How the hybrid's behaviour settings measure a behaviour (:mod:`thinklens.steering.hybrid_validation` states and
judges them): the behaviour pair and its problems, :func:`rechecks` (whether a trace's reasoning holds a re-check
round), :func:`behaviour_rows` (the pair run as the ``hybrid`` job runs it, every mode's per-problem re-checks and
correctness) and :func:`cue_diagnostics` (where the thinking model would open a round, whether the base lets it
through the guardrail).

Example:
    >>> BEHAVIOUR_PAIR["base"], BEHAVIOUR_STEPS
    ('tiny-r1', (2, 4))
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from thinklens.calibration.controls import SettingContext
from thinklens.data.formats import SPANS
from thinklens.data.problemsets import ProblemSet
from thinklens.data.words import RECHECK
from thinklens.engine.model import HookedModel
from thinklens.engine.tokenization import prompt_ids
from thinklens.generation.budgets import budgets_for, new_token_budget
from thinklens.steering.configs import HybridJobConfig, base_format
from thinklens.steering.hybrid import train_hybrid_vectors
from thinklens.steering.hybrid_generate import hybrid_generate
from thinklens.steering.problems import data_format, graded
from thinklens.tasks.protocol import HELD_OUT


@dataclass(frozen=True)
class Plan:
    """How much a setting runs."""

    n_eval: int
    """Held-out problems evaluated per mode (the unit of the paired tests)."""
    n_train: int
    """Thinking-model traces that build the categories and vectors."""
    sae_steps: int
    vector_iters: int




BEHAVIOUR_PAIR: dict[str, str] = {"base": "tiny-r1", "thinking": "tiny-overthink"}
"""The behaviour pair: tiny-overthink is tiny-r1 fine-tuned to re-check an answer it already has (re-check rounds
opened by "Wait, let me double-check." / "Hmm, let me verify."); same tokenizer and chat format."""
BEHAVIOUR_STEPS = (2, 4)
BEHAVIOUR_MODES = ("base", "thinking", "hybrid", "random_vectors")
#: Hybrid settings of this setting beyond the plan (HybridConfig fields; empty: the job's defaults).
BEHAVIOUR_OVERRIDES: dict[str, Any] = {}


def rechecks(texts: list[str]) -> list[bool]:
    """Per text: whether its reasoning (before ``</think>``) holds at least one re-check round
    (:data:`thinklens.data.words.RECHECK`, the rounds :func:`thinklens.zoo.overthink.ground_truth` counts).

    Example:
        >>> rechecks(["Okay, 3 + 4 = 7. So Ann has 7 cards. Wait, let me double-check. 3 + 4 = 7.", "Okay. Wait, 7."])
        [True, False]
    """
    return [RECHECK.search(t.split(SPANS["think"].close, 1)[0]) is not None for t in texts]


def behaviour_rows(ctx: SettingContext, plan: Plan, sub: str = "behaviour", pair: dict[str, str] | None = None,
                   overrides: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Run the pair as the ``hybrid`` job does (its formats, problems of :data:`BEHAVIOUR_STEPS` steps, vectors,
    :func:`thinklens.steering.hybrid_generate.hybrid_generate` per mode), keeping every generated text: per mode ``texts``,
    ``recheck`` (per problem), ``correct`` and the fractions. Problems: the job's zoo streams offset by
    ``100 * ctx.seed`` (seed 0: the test problems; settings were chosen on seed 1). Written to
    ``<workdir>/<sub>/behaviour.json`` and read back from there when present. ``pair``: base and thinking
    model (default :data:`BEHAVIOUR_PAIR`); ``overrides``: HybridConfig fields (default :data:`BEHAVIOUR_OVERRIDES`)."""
    pair = pair or BEHAVIOUR_PAIR
    if ctx.workdir is None:
        ctx.workdir = Path(tempfile.mkdtemp(prefix="thinklens-validate-"))
    out_path = Path(ctx.workdir) / sub / "behaviour.json"
    if out_path.exists():
        return json.loads(out_path.read_text())["modes"]
    if ctx.threads:
        torch.set_num_threads(ctx.threads)
    lo, hi = BEHAVIOUR_STEPS
    job = HybridJobConfig(model=pair["base"], thinking=pair["thinking"], min_steps=lo, max_steps=hi,
                          n_eval=plan.n_eval, n_train=plan.n_train, sae_steps=plan.sae_steps,
                          vector_iters=plan.vector_iters, seed=ctx.seed,
                          **(BEHAVIOUR_OVERRIDES if overrides is None else overrides))
    dtype = getattr(torch, ctx.dtype)
    base = HookedModel.load(job.model, device=ctx.device, dtype=dtype)
    thinking = HookedModel.load(job.thinking, device=ctx.device, dtype=dtype)
    t_fmt = data_format(thinking, job.prompt_format)
    b_fmt = base_format(job, base, t_fmt)
    evaluated = ProblemSet.synthetic(plan.n_eval, seed=HELD_OUT["steer_eval"] + 100 * ctx.seed, min_steps=lo, max_steps=hi)
    vector = ProblemSet.synthetic(plan.n_train, seed=HELD_OUT["steer_train"] + 100 * ctx.seed, min_steps=lo, max_steps=hi)
    ep, bp = t_fmt.render_problems(evaluated, thinking.tokenizer), b_fmt.render_problems(evaluated, base.tokenizer)
    max_new = min(budgets_for(thinking, ep, new_token_budget(t_fmt, None, max_steps=hi)).shared,
                  budgets_for(base, bp, new_token_budget(b_fmt, None, max_steps=hi)).shared)
    tp = t_fmt.render_problems(vector, thinking.tokenizer)
    traces = thinking.generate(tp, max_new_tokens=max_new, batch_size=64)
    reasoning = None if t_fmt.is_zoo or t_fmt.span is None else [t_fmt.split_trace(t).reasoning for t in traces]
    hv = train_hybrid_vectors(base, thinking, traces, dataclasses.replace(job), base_prompts=prompt_ids(
        base.tokenizer, b_fmt.render_problems(vector, base.tokenizer)), reasoning=reasoning)
    answers = [p.answer for p in evaluated]
    rows: dict[str, dict[str, Any]] = {}
    for m in BEHAVIOUR_MODES:
        r = hybrid_generate(base, thinking, hv if m not in ("base", "thinking") else None, bp, job, mode=m,
                            max_new_tokens=max_new, thinking_prompts=ep)
        rows[m] = {"texts": r.texts, "recheck": rechecks(r.texts), "correct": graded(r.texts, answers),
                   "fired_fraction": r.fired / max(1, r.n_tokens), "changed_fraction": r.changed / max(1, r.n_tokens)}
    vectors = {"counts": hv.counts, "examples": {str(k): v for k, v in hv.examples.items()},
               "nll_before_after": {str(k): [round(float(x), 4) for x in (v[0], v[-1])] for k, v in hv.losses.items()},
               "bias_norm": float(hv.bias.norm()), "vector_norms": hv.vectors.norm(dim=-1).tolist(), "site": job.site}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps({"pair": pair, "steps": [lo, hi], "max_new_tokens": max_new,
                                    "vectors": vectors, "modes": rows}))
    return rows


def cue_diagnostics(ctx: SettingContext, rows: dict[str, dict[str, Any]], min_base_prob: float,
                    pair: dict[str, str] | None = None) -> dict[str, Any]:
    """Where the thinking model opens a re-check round and the base does not: at the end of each hybrid text's
    reasoning (just before ``</think>``, where tiny-overthink writes its round cue), both models' next-token
    distributions on the same prefix, after the last full stop and at it (``at_full_stop``: a byte-level BPE
    writes '.\n' there to close the reasoning and '.' to go on, so that is where greedy decoding decides).
    Reports, at each, how often the models disagree, the thinking model's token, the unsteered base model's
    probability of it (the guardrail keeps only tokens with probability >= ``min_base_prob`` under the unsteered
    base, so a token below it can never be emitted, whatever the vectors) and the base's own probability of any
    cue word."""
    THINK_CLOSE = SPANS["think"].close

    pair = pair or BEHAVIOUR_PAIR
    lo, hi = BEHAVIOUR_STEPS
    dtype = getattr(torch, ctx.dtype)
    base = HookedModel.load(pair["base"], device=ctx.device, dtype=dtype)
    thinking = HookedModel.load(pair["thinking"], device=ctx.device, dtype=dtype)
    t_fmt = data_format(thinking, "auto")
    b_fmt = base_format(HybridJobConfig(), base, t_fmt)
    n = len(rows["hybrid"]["texts"])
    problems = ProblemSet.synthetic(n, seed=HELD_OUT["steer_eval"] + 100 * ctx.seed, min_steps=lo, max_steps=hi)
    bp, tp = b_fmt.render_problems(problems, base.tokenizer), t_fmt.render_problems(problems, thinking.tokenizer)
    tok = base.tokenizer
    cue_ids = {w: tok(f" {w}", add_special_tokens=False)["input_ids"][0] for w in ("Wait", "Hmm", "Alternatively")}
    p_think_tok, p_cue_base, disagree, think_tokens = [], [], 0, {}
    out: dict[str, Any] = {"n": n, "min_base_prob": min_base_prob}
    # two prefixes: after the reasoning's last full stop (where a round's first word would come), and before that
    # full stop (where a merged '.\n' closes the reasoning and a bare '.' lets a sentence follow: the decision
    # greedy decoding actually takes, one token earlier)
    for where, trim in (("after_full_stop", 0), ("at_full_stop", 1)):
        p_think_tok, p_cue_base, disagree, think_tokens = [], [], 0, {}
        with torch.no_grad():
            for text, b_prompt, t_prompt in zip(rows["hybrid"]["texts"], bp, tp):
                cut = text.find(THINK_CLOSE)
                prefix = text[:cut].rstrip() if cut >= 0 else text
                if trim and prefix.endswith("."):
                    prefix = prefix[:-1]
                ids = [tok(p + prefix, add_special_tokens=False, return_tensors="pt")["input_ids"] for p in (b_prompt, t_prompt)]
                pb = base.forward({"input_ids": ids[0]}).logits[0, -1].softmax(-1)
                pt = thinking.forward({"input_ids": ids[1]}).logits[0, -1].softmax(-1)
                t_top, b_top = int(pt.argmax()), int(pb.argmax())
                disagree += t_top != b_top
                word = tok.decode([t_top])
                think_tokens[word] = think_tokens.get(word, 0) + 1
                p_think_tok.append(float(pb[t_top]))
                p_cue_base.append(max(float(pb[i]) for i in cue_ids.values()))
        out[where] = {"disagree": disagree / n, "thinking_token": think_tokens,
                      "base_prob_of_thinking_token_median": statistics.median(p_think_tok),
                      "base_prob_of_thinking_token_max": max(p_think_tok),
                      "passes_guardrail": sum(p >= min_base_prob for p in p_think_tok) / n,
                      "base_prob_of_any_cue_median": statistics.median(p_cue_base)}
    return out
