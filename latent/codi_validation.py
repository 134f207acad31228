"""Planted and null settings of CODI (shared/specs/controls.md), run by
``thinklens run validate --methods codi``.

The task needs serial computation: 6-8 chained operations (values 0..99) that the zoo's 4-layer model cannot do
in one forward pass. Three organisms, all trained from ``tiny-cot`` for the same number of steps on the same
stream of 6-8 step problems (:data:`ORGANISMS`, rebuilt by :data:`RETRAIN`):

- ``tiny-nocot-serial``: SFT on the answer only (the matched No-CoT);
- ``tiny-cot-serial``: SFT on chain + answer (the matched CoT-SFT);
- ``tiny-codi-serial``: CODI with :data:`N_LATENTS` latents (at least 3x fewer positions than the chain), its
  teacher's chain without the last step (the reference's default);
- ``tiny-codi-serial-full``: the same with the whole chain in the teacher (``--include-last-step``).

Both settings score the organisms with the latent table's own evaluation (:func:`thinklens.latent.evaluate.table_row`,
what ``thinklens run latent-eval`` runs) on held-out problems, paired on the same problems.

- ``codi planted-serial``: the task's precondition, measured on every run: the matched No-CoT at most
  :data:`MAX_NOCOT` and the matched CoT-SFT at least :data:`MIN_COT` (Wilson intervals beside them). Statistic:
  CODI's accuracy minus the matched No-CoT's, paired (McNemar). Recovered when the precondition holds, CODI's
  compression (CoT-SFT's reasoning positions over CODI's) is at least :data:`MIN_COMPRESSION` and the gain is at
  least :data:`MIN_GAIN` and an effect. Diagnostics beside it: accuracy by step count, CODI's LM in explicit-CoT
  mode (what its teacher side learnt), :func:`last_step_misses` (explicit-mode traces that write every step but
  the last right and miss the answer) and :func:`latent_hits` (whether the latents decode to the chain's
  intermediate results).
- ``codi planted-serial-full-chain``: the same with ``tiny-codi-serial-full``. Without its last step the teacher
  computes that step in one pass at the distillation token, and on 6-8 step problems it misses it often (the
  explicit mode of ``tiny-codi-serial`` writes every earlier step right and misses the answer on about four
  problems in ten, the ``last_step_misses`` of the full run): the state the student is pulled to is then a wrong
  answer's. With the whole chain the teacher's state at that token holds the answer it has just written.
- ``codi null-latents-full-chain``: null-latents with ``tiny-codi-serial-full``.
- ``codi null-latents``: the same CODI model with every latent replaced by a random vector of the latent's own
  norm (:func:`noise_latents`): the information the latents carry is removed, so a gain over the matched No-CoT
  that came through them must vanish. No effect is shown, not read from a non-significant test: the noised
  model's accuracy minus the matched No-CoT's, paired on the same problems, must lie within +-:data:`NULL_MARGIN`
  (TOST, its 90% interval inside the margin: :func:`thinklens.latent.null_equivalence.null_verdict`). A loss fails
  it as a gain does: noise that breaks the model does not show that the latents carried nothing. The null scores
  :data:`NULL_PLAN`'s problems, quick or full. Measured (300 problems): the noised CODIs score 0.06
  against the matched No-CoT's 0.33, -0.27 (90% interval [-0.31, -0.22]), the noised Coconut 0.03, -0.29: the
  noise breaks the models, and the nulls fail (the records of results/records/validate-codi and validate-coconut
  were judged by the earlier rule, no significant gain, and read no-effect).

Example:
    >>> [s.key for s in SETTINGS][:4]
    ['codi/planted-serial', 'codi/null-latents', 'codi/planted-serial-full-chain', 'codi/null-latents-full-chain']
    >>> [s.key for s in SETTINGS][4:]
    ['coconut/planted-serial', 'coconut/null-latents']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.findings import findings_doc, paired_finding
from thinklens.calibration.stats import wilson
from thinklens.latent.evaluate import table_row
from thinklens.latent.latent_model import load_latent_model
from thinklens.latent.null_equivalence import null_verdict
from thinklens.tasks.protocol import problems_by_steps

ORGANISMS: dict[str, str] = {"nocot": "tiny-nocot-serial", "cot": "tiny-cot-serial", "codi": "tiny-codi-serial",
                             "codi_full": "tiny-codi-serial-full", "coconut": "tiny-coconut-serial",
                             "latent_sft": "tiny-latent-sft-serial"}
"""The matched No-CoT, the matched CoT-SFT, CODI (teacher without and with the last step) and Coconut, trained alike
(from tiny-cot, the same number of optimizer steps) on 6-8 step problems."""
TRAIN_STEPS = 7000
N_LATENTS = 12
COCONUT_STAGE_STEPS = 1400
"""Coconut's recipe (3 stages of 400 steps and a last one of 800, c=2: 6 latents) scaled to :data:`TRAIN_STEPS`: 3 x 1400
+ 2800."""
LSFT_STAGE1_STEPS = 1000
"""Latent-SFT's recipe (stage 1's encoder, decoder and joint runs of 200 steps, stage 2 of 800) scaled to
:data:`TRAIN_STEPS`: 3 x 1000 + 4000."""
#: Each latent method's name in the settings, its organism key and the label of its rows.
LATENT_METHODS = {"codi": ("codi", "CODI"), "codi_full": ("codi", "CODI"), "coconut": ("coconut", "Coconut"),
                  "latent_sft": ("latent_sft", "Latent-SFT")}
MIN_STEPS, MAX_STEPS = 6, 8
RETRAIN = {
    "nocot": f"thinklens run sft --no-cot --min-steps {MIN_STEPS} --max-steps {MAX_STEPS} --train-steps {TRAIN_STEPS} "
             f"--threads 1 --publish data/zoo/{ORGANISMS['nocot']}",
    "cot": f"thinklens run sft --min-steps {MIN_STEPS} --max-steps {MAX_STEPS} --train-steps {TRAIN_STEPS} --threads 1 "
           f"--publish data/zoo/{ORGANISMS['cot']}",
    "codi": f"thinklens run codi --min-steps {MIN_STEPS} --max-steps {MAX_STEPS} --train-steps {TRAIN_STEPS} "
            f"--n-latents {N_LATENTS} --threads 1 --publish data/zoo/{ORGANISMS['codi']}",
    "codi_full": f"thinklens run codi --min-steps {MIN_STEPS} --max-steps {MAX_STEPS} --train-steps {TRAIN_STEPS} "
                 f"--n-latents {N_LATENTS} --include-last-step --threads 1 --publish data/zoo/{ORGANISMS['codi_full']}",
    "coconut": f"thinklens run coconut --min-steps {MIN_STEPS} --max-steps {MAX_STEPS} --stage-steps {COCONUT_STAGE_STEPS} "
               f"--final-stage-steps {TRAIN_STEPS - 3 * COCONUT_STAGE_STEPS} --threads 1 --publish data/zoo/{ORGANISMS['coconut']}",
    "latent_sft": f"thinklens run latent-sft --min-steps {MIN_STEPS} --max-steps {MAX_STEPS} --encoder-steps {LSFT_STAGE1_STEPS} "
                  f"--decoder-steps {LSFT_STAGE1_STEPS} --joint-steps {LSFT_STAGE1_STEPS} --stage2-steps "
                  f"{TRAIN_STEPS - 3 * LSFT_STAGE1_STEPS} --threads 1 --publish data/zoo/{ORGANISMS['latent_sft']}",
}
"""The commands that trained each organism (from tiny-cot, seed 0, batch 32, lr 2e-3 cosine)."""
PROBLEM_SEED = 73_000
"""Held-out problems of the settings (far from the training streams and the other held-out seeds)."""
MAX_NOCOT = 0.40
"""The matched No-CoT's accuracy at most this: the task needs serial computation the model cannot do without a chain."""
MIN_COT = 0.90
"""The matched CoT-SFT's accuracy at least this: the task is learnable with a chain."""
MIN_COMPRESSION = 3.0
MIN_GAIN = 0.20
"""CODI's accuracy above the matched No-CoT's, in accuracy points / 100."""
TABLE_TARGETS = {"fraction_of_cot": 0.9, "compression": MIN_COMPRESSION, "points_above_nocot": round(100 * MIN_GAIN)}
"""The latent table's targets for CODI (results/latent_table.json): at least this share of the matched CoT-SFT's
accuracy (the paper: CODI matches explicit CoT on GSM8k at GPT-2 scale), the compression, and the points above the
matched No-CoT (the controls spec's bar, the same as :data:`MIN_GAIN`)."""


@dataclass(frozen=True)
class Plan:
    """How much a setting runs."""

    n_per_steps: int
    """Problems per step count (6, 7, 8)."""


QUICK = Plan(n_per_steps=8)
FULL = Plan(n_per_steps=100)
NULL_PLAN = FULL
"""The null settings' problems, quick or full: 24 problems cannot show an accuracy difference within
+-:data:`NULL_MARGIN` (even with no problem changed the exact bound is 0.12), 300 can (see :data:`NULL_MARGIN`), and
scoring them with noise latents takes seconds (3-5 s a setting on one CPU thread)."""
NULL_MARGIN = MIN_GAIN / 2
"""The null-latents settings' margin of no practical effect, stated before the runs it judges: the noised model's accuracy minus
the matched No-CoT's, paired over problems, must be shown inside +-0.10 by TOST (90% interval). Half the gain the
planted setting requires (:data:`MIN_GAIN`): a gain carried by the latents at the planted size lies outside it, and
so does a loss as large (noise that breaks the model instead of removing what the latents carry). The arms are two
models that disagree on about a third of the problems, so on :data:`NULL_PLAN`'s 300 problems the interval's
half-width is about 0.055: equivalence is shown when the two accuracies agree within about 0.045."""


def noise_latents(module: Any, seed: int) -> None:
    """Replace ``module``'s latent inputs (a :class:`~thinklens.latent.continuous_thought.ContinuousThought`) by random
    Gaussian directions scaled to each latent's own norm, drawn from ``seed``: the latents then carry no information
    about the problem, and nothing else changes.

    Example:
        >>> import torch
        >>> from torch import nn
        >>> m = nn.Module(); m.latent_input = lambda h: 2 * h
        >>> noise_latents(m, 0)
        >>> h = torch.ones(3, 4)
        >>> out = m.latent_input(h)
        >>> torch.allclose(out.norm(dim=-1), (2 * h).norm(dim=-1)), bool((out == 2 * h).all())
        (True, False)
    """
    own = module.latent_input
    gen = torch.Generator().manual_seed(seed)

    def random_latent(h: "torch.Tensor") -> "torch.Tensor":
        x = own(h)  # [batch, d]
        r = torch.randn(x.shape, generator=gen, dtype=torch.float32).to(device=x.device, dtype=x.dtype)
        return r * (x.norm(dim=-1, keepdim=True) / r.norm(dim=-1, keepdim=True))

    module.latent_input = random_latent


def _problems(ctx: SettingContext, plan: Plan | None = None) -> list:
    """The settings' held-out problems: ``plan``'s count, by default the quick or the full one."""
    plan = plan or (QUICK if ctx.quick else FULL)
    return problems_by_steps(plan.n_per_steps, MIN_STEPS, MAX_STEPS, seed=PROBLEM_SEED + ctx.seed)


def _steps(ctx: SettingContext, plan: Plan | None = None) -> list[int]:
    return [p.n_steps for p in _problems(ctx, plan)]


def latent_hits(problems: list, records: list[dict]) -> float:
    """Diagnostic: the mean share of a chain's intermediate results (each step's result but the last, the answer)
    found among the top tokens of the problem's latents through the LM head (the records' ``latents``); nan without
    intermediate results.

    Example:
        >>> from thinklens.tasks import generate_problems
        >>> p = generate_problems(1, seed=0, n_steps=3)[0]
        >>> rec = {"latents": [{"tokens": [str(p.steps[0].result)], "probs": [1.0]}]}
        >>> latent_hits([p], [rec])
        0.5
    """
    shares = []
    for p, r in zip(problems, records):
        wanted = [str(s.result) for s in p.steps[:-1]]
        seen = {t for lat in r["latents"] for t in lat["tokens"]}
        if wanted:
            shares.append(sum(w in seen for w in wanted) / len(wanted))
    return sum(shares) / len(shares) if shares else float("nan")


def last_step_misses(problems: list, records: list[dict]) -> float:
    """Diagnostic of CODI's explicit-CoT mode: the share of problems whose written chain is exactly the gold chain's
    results but the last (every step right, the last one not written, as the teacher was trained) and whose answer
    is wrong: the one-pass last step missed.

    Example:
        >>> from thinklens.tasks import generate_problems
        >>> p = generate_problems(1, seed=0, n_steps=2)[0]
        >>> s = p.steps[0]
        >>> text = f"<< {s.left} {s.op} {s.right} = {s.result} >> #### 1000"
        >>> last_step_misses([p, p], [{"text": text, "correct": False}, {"text": text, "correct": True}])
        0.5
    """
    def written(text: str) -> list[int]:
        return [int(x) for x in re.findall(r"=\s*(-?\d+)\s*>>", text)]

    missed = [written(r["text"]) == [s.result for s in p.steps[:-1]] and not r["correct"] for p, r in zip(problems, records)]
    return sum(missed) / len(missed)


def distillation_distance(name: str, problems: list, *, batch_size: int = 64) -> list[float]:
    """Diagnostic of a CODI organism: per problem, the distillation term of its training loss on that held-out
    problem (the student's hidden states at the token before the answer against its teacher's, over every layer,
    each divided by the teacher's std), with the teacher's chain as the organism was trained. A student that misses
    where it is far from its teacher's state has not learnt to reach it; one that misses close to it reads it wrong.

    Example:
        >>> # d = distillation_distance("tiny-codi-serial-full", problems); sum(d) / len(d)
    """
    lm = load_latent_model(name)
    examples = lm.builder.build_all(problems)
    out: list[float] = []
    with torch.no_grad():
        for i in range(0, len(examples), batch_size):
            out += lm.module.example_losses(lm.module.collate(examples[i:i + batch_size]))["kd"].tolist()
    return out


def by_outcome(values: list[float], correct: list[bool]) -> dict[str, Any]:
    """Mean of ``values`` over the right and the wrong problems, and the share of problems.

    Example:
        >>> by_outcome([0.1, 0.3, 0.5], [True, False, False])
        {'correct': 0.1, 'wrong': 0.4, 'n_correct': 1, 'n_wrong': 2}
    """
    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 6) if xs else None

    right = [v for v, c in zip(values, correct) if c]
    wrong = [v for v, c in zip(values, correct) if not c]
    return {"correct": mean(right), "wrong": mean(wrong), "n_correct": len(right), "n_wrong": len(wrong)}


def _rows(ctx: SettingContext, keys: tuple[str, ...], *, noise: bool = False,
          plan: Plan | None = None) -> dict[str, tuple[dict, list[bool]]]:
    """Each organism's table row and per-problem grades on the settings' problems (``plan``'s, by default the quick or
    the full ones; CODI's latents noised when asked; a latent row holds :func:`latent_hits`, a CODI's its
    :func:`distillation_distance` per problem; ``explicit`` / ``explicit_full``: a CODI's LM in explicit-CoT mode, its
    row holding :func:`last_step_misses`)."""
    if ctx.threads:
        torch.set_num_threads(ctx.threads)
    problems = _problems(ctx, plan)
    out = {}
    for key in keys:
        if key.startswith("explicit"):
            row, records = table_row(ORGANISMS[key.replace("explicit", "codi")], problems, explicit=True)
            row["last_step_misses"] = last_step_misses(problems, records)
        elif key in LATENT_METHODS and noise:
            row, records = _noised(ORGANISMS[key], problems, ctx.seed)
        else:
            row, records = table_row(ORGANISMS[key], problems)
            if LATENT_METHODS.get(key, ("",))[0] == "codi":
                row["distillation_distance"] = distillation_distance(ORGANISMS[key], problems)
        if key in LATENT_METHODS:
            row["latent_hits"] = latent_hits(problems, records)
        out[key] = (row, [bool(r["correct"]) for r in records])
    return out


def _noised(name: str, problems: list, seed: int) -> tuple[dict, list[dict]]:
    lm = load_latent_model(name)
    noise_latents(lm.module, seed)
    records = lm.infer_problems(problems)
    n = len(records)
    row = {"model": name, "method": lm.method, "label": "latents replaced by same-norm noise",
           "accuracy": sum(bool(r["correct"]) for r in records) / n, "latent_steps": sum(r["latent_steps"] for r in records) / n,
           "reasoning_positions": sum(r["reasoning_positions"] for r in records) / n, "n": n}
    return row, records


def _gain(codi: list[bool], nocot: list[bool], label: str, seed: int) -> Any:
    return paired_finding(f"{label} beats the matched No-CoT on the same {MIN_STEPS}-{MAX_STEPS} step problems",
                          [float(x) for x in codi], [float(x) for x in nocot], control=f"matched No-CoT ({ORGANISMS['nocot']})",
                          statistic="accuracy", binary=True, seed=seed, ceiling=1.0, ceiling_margin=0.0)


def _accuracy(correct: list[bool], steps: list[int] | None = None) -> dict[str, Any]:
    """Accuracy with its Wilson interval, and by step count when the problems' step counts are given.

    Example:
        >>> _accuracy([True, False, True, True], [6, 6, 7, 7])["by_steps"]
        {'6': 0.5, '7': 1.0}
    """
    out: dict[str, Any] = {"accuracy": sum(correct) / len(correct), "ci": list(wilson(sum(correct), len(correct))),
                           "n": len(correct)}
    if steps is not None:
        out["by_steps"] = {str(k): sum(c for c, s in zip(correct, steps) if s == k) / steps.count(k) for k in sorted(set(steps))}
    return out


def _check(gain: Any, verdict: str, target: str, details: dict[str, Any]) -> Check:
    lo, hi = gain.extra["diff_ci"]
    return Check("gain_over_nocot", float(gain.extra["diff"]), (float(lo), float(hi)), verdict, n=gain.n, target=target,
                 details={**details, "findings": findings_doc([gain])})


def _planted(ctx: SettingContext, key: str = "codi") -> Check:
    """``key``: the latent organism scored (:data:`LATENT_METHODS`): ``codi`` (``tiny-codi-serial``), ``codi_full``
    (``tiny-codi-serial-full``) or ``coconut``. A CODI's LM is also scored in explicit-CoT mode (its teacher side);
    details name the method's rows ``<method>_accuracy`` and ``<method>_positions``."""
    method, label = LATENT_METHODS[key]
    explicit_key = key.replace("codi", "explicit") if method == "codi" else None
    got = _rows(ctx, ("nocot", "cot", key) + ((explicit_key,) if explicit_key else ()))
    (_, nocot), (cot_row, cot), (latent_row, latent) = got["nocot"], got["cot"], got[key]
    steps = _steps(ctx)  # the problems' step counts, drawn once
    gain = _gain(latent, nocot, label, ctx.seed)
    compression = cot_row["reasoning_positions"] / latent_row["reasoning_positions"]
    precondition = sum(nocot) / len(nocot) <= MAX_NOCOT and sum(cot) / len(cot) >= MIN_COT
    met = compression >= MIN_COMPRESSION and gain.extra["diff"] >= MIN_GAIN and gain.is_effect
    details = {"organisms": {k: ORGANISMS[k] for k in ("nocot", "cot", key)},
               "steps": [MIN_STEPS, MAX_STEPS], "problem_seed": PROBLEM_SEED + ctx.seed,
               "precondition_met": precondition, "compression": compression,
               "cot_positions": cot_row["reasoning_positions"], f"{method}_positions": latent_row["reasoning_positions"],
               **{f"{k}_accuracy": _accuracy(v, steps) for k, v in (("nocot", nocot), ("cot", cot), (method, latent))},
               "latent_hits": latent_row.get("latent_hits"), "p": gain.p}
    if explicit_key:
        explicit_row, explicit = got[explicit_key]
        details |= {"codi_explicit_accuracy": _accuracy(explicit, steps),
                    "explicit_last_step_misses": explicit_row["last_step_misses"]}
        if "distillation_distance" in latent_row:
            details["distillation_distance"] = by_outcome(latent_row["distillation_distance"], latent)
    return _check(gain, "recovered" if precondition and met else "failed",
                  f"matched No-CoT <= {MAX_NOCOT} and matched CoT-SFT >= {MIN_COT} (the task needs a chain); {label} at "
                  f">= {MIN_COMPRESSION:g}x compression beats the matched No-CoT by >= {MIN_GAIN} (McNemar p < 0.05)",
                  details)


def _null(ctx: SettingContext, key: str = "codi") -> Check:
    """``key`` as in :func:`_planted`. No effect only when shown: the noised model's accuracy minus the matched
    No-CoT's within +-:data:`NULL_MARGIN` (:func:`~thinklens.latent.null_equivalence.null_verdict`; the TOST in the
    details as ``tost_accuracy``); the paired test's finding (McNemar) beside it."""
    method, label = LATENT_METHODS[key]
    got = _rows(ctx, ("nocot", key), noise=True, plan=NULL_PLAN)
    (_, nocot), (latent_row, latent) = got["nocot"], got[key]
    steps = _steps(ctx, NULL_PLAN)  # the problems' step counts, drawn once
    gain = _gain(latent, nocot, f"{label} with noise latents", ctx.seed)
    verdict, tost = null_verdict(latent, nocot, margin=NULL_MARGIN)
    details = {"organisms": {k: ORGANISMS[k] for k in ("nocot", key)},
               "steps": [MIN_STEPS, MAX_STEPS], "problem_seed": PROBLEM_SEED + ctx.seed,
               "latents": "random Gaussian directions at each latent's own norm",
               **{f"{k}_accuracy": _accuracy(v, steps) for k, v in (("nocot", nocot), (f"noised_{method}", latent))},
               "latent_hits": latent_row.get("latent_hits"), "p": gain.p, "tost_accuracy": tost}
    return _check(gain, verdict,
                  f"{label} with its latents replaced by same-norm noise: accuracy minus the matched No-CoT's on the same "
                  f"problems shown within +-{NULL_MARGIN:g} (paired TOST: its 90% interval inside the margin, else failed; "
                  "a loss fails as a gain does)", details)


SETTINGS = [
    Setting("codi", "planted-serial", "recovered", partial(_planted, key="codi"), kind="benchmark",
            help="6-8 step chains the matched No-CoT cannot do (<= 40%) and the matched CoT-SFT can (>= 90%): CODI at "
            ">= 3x compression beats the matched No-CoT by >= 20 points (McNemar)"),
    Setting("codi", "null-latents", "no-effect", partial(_null, key="codi"),
            help=f"the same CODI with its latents replaced by same-norm noise: accuracy within +-{NULL_MARGIN:g} of the "
            "matched No-CoT (paired TOST)"),
    Setting("codi", "planted-serial-full-chain", "recovered", partial(_planted, key="codi_full"), kind="benchmark",
            help="planted-serial with the CODI whose teacher keeps the chain's last step (--include-last-step)"),
    Setting("codi", "null-latents-full-chain", "no-effect", partial(_null, key="codi_full"),
            help="null-latents with the CODI whose teacher keeps the chain's last step"),
    Setting("coconut", "planted-serial", "recovered", partial(_planted, key="coconut"), kind="benchmark",
            help="codi's planted-serial task and targets with Coconut (tiny-coconut-serial, 6 latents, trained as long)"),
    Setting("coconut", "null-latents", "no-effect", partial(_null, key="coconut"),
            help=f"the same Coconut with its latents replaced by same-norm noise: accuracy within +-{NULL_MARGIN:g} of "
            "the matched No-CoT (paired TOST)"),
]
