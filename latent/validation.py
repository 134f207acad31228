"""Planted and null settings of LatentSeek (shared/specs/controls.md), run by
``thinklens run validate --methods latent-seek``.

The organism is ``tiny-cot-short`` (tiny-cot's recipe stopped at 300 steps: weak on long chains) on held-out
6-8 step problems: its greedy chain is often wrong while one of a few sampled chains is right, so a search
near the greedy chain has room to help. Both settings run the real ``latent-seek`` job (PSRM-style rewards,
the oracle best-of-N baseline at T=1 on the same prompts) and read its per-problem results back.

- ``latent-seek planted``: the reward is PSRM (0 if the chain states the gold answer, else -1). Headroom,
  measured on every run: problems the greedy chain gets wrong and some sampled chain gets right. Statistic:
  LatentSeek's accuracy minus its start (the greedy chain), paired on problems (McNemar). Recovered when the
  headroom is at least :data:`MIN_HEADROOM` and the gain is an effect. Reported beside it, at equal compute:
  oracle best-of-N with as many chains per problem as LatentSeek checked on it (the greedy chain and one per
  iteration; a regeneration is at most one chain of forward passes), LatentSeek minus it with its paired
  interval; and where the greedy chain first goes wrong against the optimised span (LatentSeek re-decodes only
  the first ``rho * T`` tokens from its latents).
- ``latent-seek null``: the reward is a fair coin per chain (:func:`coin_reward`: the CRC32 of its text), which
  carries no information about correctness, with the same stopping rule: the method must show no effect, shown
  rather than read from a non-significant test: LatentSeek's accuracy minus its start's, paired on the same
  problems, within +-:data:`NULL_MARGIN` (TOST, its 90% interval inside the margin:
  :func:`thinklens.latent.null_equivalence.null_verdict`), quick (:data:`QUICK_NULL`) or full. A search that breaks
  right chains fails it as one that fixes wrong ones does.

Measured (full run, results/records/validate-latent-hybrid, 150 problems): planted recovered, 0.46 -> 0.52 (9
fixed, 0 broken, McNemar p=0.004), headroom 0.35; oracle best-of-N with as many chains 0.77, LatentSeek minus it
-0.25 [-0.34, -0.17]. Why it is far below: 78 of the 81 wrong greedy chains first go wrong after the optimised
span (rho = 0.2: the first ~10 of 51 tokens; the organism's errors are operand copies of later steps), so a fix
needs the re-decoded first step to steer the regenerated rest, while a sample can differ anywhere. No bug found
in the reward sign (a wrong chain's tokens are pushed down), the latents (final-norm states, aligned with the
greedy tokens) or the stopping rule (PSRM never breaks a right chain). Null: the coin reward breaks 24 right
chains and fixes none (0.46 -> 0.30): no gain, and a loss of 0.16 (90% interval [-0.21, -0.11]) far outside
+-:data:`NULL_MARGIN`, so under the equivalence rule the null fails (that record was judged by the earlier rule,
"no significant gain", and read no-effect).

Example:
    >>> [s.key for s in SETTINGS]
    ['latent-seek/planted', 'latent-seek/null']
    >>> coin_reward("<< 1 + 2 = 3 >> #### 3", 3) in (0.0, -1.0)
    True
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from transformers import AutoTokenizer

from thinklens.calibration.controls import Check, Setting, SettingContext
from thinklens.calibration.findings import findings_doc, paired_finding
from thinklens.calibration.stats import wilson
from thinklens.data.answers import is_correct
from thinklens.latent.null_equivalence import null_verdict
from thinklens.runs.folders import RunFolder
from thinklens.tasks.problem import spaced
from thinklens.tasks.protocol import problems_by_steps
from thinklens.zoo.registry import zoo_path

ORGANISM = "tiny-cot-short"
"""The frozen model: weak on long chains, right in some of its samples (headroom for a search)."""
MIN_STEPS, MAX_STEPS = 6, 8
PROBLEM_SEED = 71_000
"""Held-out problems of the settings (far from the training streams and the other held-out seeds)."""
TEMPERATURE = 1.0
"""Temperature of the oracle best-of-N baseline's samples."""
MIN_HEADROOM = 0.10
"""Share of problems greedy gets wrong and a sample gets right, below which the planted setting has no room."""
NULL_MARGIN = 0.05
"""The null's margin of no practical effect, stated before the runs it judges: LatentSeek's accuracy minus its start's
(the greedy chain's), paired over problems, must be shown inside +-0.05 by TOST (90% interval). Five points: a
search guided by a reward that knows nothing about correctness and still moves accuracy by as much as the planted
setting's measured gain (+0.06) is not doing nothing, in either direction; it is the margin of the project's other
accuracy nulls on the same problems (``steering/hybrid_validation.py``, ``steering/vector_validation.py``). The two
arms are one model, differing only where the search regenerated a chain, so a tight margin can be shown: with no
problem changed the exact bound is 0.02 on the full 150 problems and 0.049 on :data:`QUICK_NULL`'s 60."""


@dataclass(frozen=True)
class Plan:
    """How much a setting runs."""

    n_per_steps: int
    """Problems per step count (6, 7, 8)."""
    lr: float = 0.1
    """Adam learning rate on the latents."""
    max_iters: int = 10
    """Iterations per problem (best-of-N draws 1 + max_iters chains)."""
    steps: tuple[int, int] = (MIN_STEPS, MAX_STEPS)
    """Step counts of the problems (min, max)."""
    paired: bool = True
    """The planted setting: judge the gain by the paired test (McNemar); False (the quick version: too few problems
    for the test to reach p < 0.05 in seconds): by its direction, some problem fixed and none broken. The null is
    judged by its equivalence test whatever this says."""


QUICK = Plan(n_per_steps=8, steps=(6, 7), paired=False)
FULL = Plan(n_per_steps=50)
QUICK_NULL = Plan(n_per_steps=30, steps=(6, 7))
"""The quick null: 60 problems, the fewest (59) at which a null that changes no problem shows +-:data:`NULL_MARGIN`
(the exact bound ``1 - 0.05 ** (1 / n)``); the quick planted setting's 16 never could."""


def coin_reward(text: str, answer: int | str) -> float:
    """A reward independent of correctness: 0 or -1 by a fair coin seeded by the chain's text (CRC32 parity).

    Example:
        >>> coin_reward("a", 1) == coin_reward("a", 2)  # the gold answer is never read
        True
    """
    return 0.0 if zlib.crc32(text.encode()) % 2 == 0 else -1.0


def _seek(ctx: SettingContext, plan: Plan, reward: str, sub: str) -> dict[str, Any]:
    """Run the ``latent-seek`` job into ``<workdir>/<sub>`` and return its seek.json (resumed when there)."""
    ctx.run_job("latent-seek", sub, model=ORGANISM, reward=reward, lr=plan.lr, max_iters=plan.max_iters,
                n_eval=plan.n_per_steps, min_steps=plan.steps[0], max_steps=plan.steps[1], seed=PROBLEM_SEED + ctx.seed,
                baseline_temperatures=(TEMPERATURE,), baseline_samples=0)
    assert ctx.workdir is not None
    return RunFolder.open(ctx.workdir / sub).read_result("seek")


def outcomes(doc: dict[str, Any]) -> dict[str, list[bool]]:
    """Per problem of a seek.json: ``start`` (greedy chain), ``seek`` (LatentSeek's final chain), ``sample``
    (some of the 1 + max_iters sampled chains right), ``matched`` (best-of-N with as many chains as
    LatentSeek checked on that problem: the greedy one and one sample per iteration) and ``full`` (the greedy
    chain or any sample: best-of-(1 + max_iters)).

    Example:
        >>> p = {"answer": 5, "original_text": "#### 4", "final_text": "#### 5", "iterations": [{}, {}],
        ...      "baseline": {"1.0": [False, False, True]}}
        >>> outcomes({"problems": [p]})
        {'start': [False], 'seek': [True], 'sample': [True], 'matched': [False], 'full': [True]}
    """
    out: dict[str, list[bool]] = {k: [] for k in ("start", "seek", "sample", "matched", "full")}
    for p in doc["problems"]:
        start, samples = is_correct(p["original_text"], p["answer"]), list(p["baseline"][repr(TEMPERATURE)])
        out["start"].append(start)
        out["seek"].append(is_correct(p["final_text"], p["answer"]))
        out["sample"].append(any(samples))
        out["matched"].append(start or any(samples[: len(p["iterations"])]))
        out["full"].append(start or any(samples))
    return out


def first_error(problem: Any, text: str, tokenizer: Any) -> int:
    """Token index where ``text`` (a greedy chain) first departs from the problem's gold chain (its length
    when it never does).

    Example:
        >>> from thinklens.tasks import generate_problems
        >>> from thinklens.zoo.tokenizer import build_zoo_tokenizer
        >>> p = generate_problems(1, seed=0, n_steps=2)[0]
        >>> tok = build_zoo_tokenizer()
        >>> from thinklens.tasks.problem import spaced
        >>> gold = spaced(p.cot)
        >>> first_error(p, gold, tok) == len(tok(gold, add_special_tokens=False)["input_ids"]), first_error(p, "<< 0", tok)
        (True, 1)
    """
    gold, got = (tokenizer(t, add_special_tokens=False)["input_ids"] for t in (spaced(problem.cot), text))
    return next((i for i, (a, b) in enumerate(zip(got, gold)) if a != b), min(len(got), len(gold)))


def error_places(doc: dict[str, Any], plan: Plan, seed: int) -> dict[str, Any]:
    """Where the greedy chains that are wrong first go wrong, against the optimised span (``n_optimised``
    first tokens), and how many of each kind LatentSeek fixed: the diagnostic of a small gain."""
    tok = AutoTokenizer.from_pretrained(str(zoo_path(ORGANISM)))
    problems = problems_by_steps(plan.n_per_steps, *plan.steps, seed=PROBLEM_SEED + seed)
    inside = outside = fixed_inside = fixed_outside = 0
    for prob, p in zip(problems, doc["problems"]):
        if is_correct(p["original_text"], p["answer"]):
            continue
        fixed = is_correct(p["final_text"], p["answer"])
        if first_error(prob, p["original_text"], tok) < p["n_optimised"]:
            inside, fixed_inside = inside + 1, fixed_inside + fixed
        else:
            outside, fixed_outside = outside + 1, fixed_outside + fixed
    return {"wrong_greedy": inside + outside, "first_error_in_optimised_span": inside, "fixed_there": fixed_inside,
            "first_error_after_span": outside, "fixed_after": fixed_outside}


def _gain(o: dict[str, list[bool]], seed: int) -> Any:
    return paired_finding("LatentSeek raises accuracy over its start (the greedy chain)", o["seek"], o["start"],
                          control="greedy chain", statistic="accuracy", binary=True, seed=seed)


def _check(gain: Any, verdict: str, target: str, details: dict[str, Any]) -> Check:
    lo, hi = gain.extra["diff_ci"]
    more = details.pop("more", [])
    return Check("gain_over_start", float(gain.extra["diff"]), (float(lo), float(hi)), verdict, n=gain.n, target=target,
                 details={**details, "findings": findings_doc([gain, *more])})


def _planted(ctx: SettingContext) -> Check:
    plan = QUICK if ctx.quick else FULL
    doc = _seek(ctx, plan, "psrm", "seek-psrm")
    o = outcomes(doc)
    n = len(o["start"])
    room = sum(s and not g for s, g in zip(o["sample"], o["start"]))
    gain = _gain(o, ctx.seed)
    vs = paired_finding("LatentSeek beats oracle best-of-N at equal compute (as many chains per problem)",
                        o["seek"], o["matched"], control="oracle best-of-N, equal chains", statistic="accuracy",
                        binary=True, seed=ctx.seed)
    vs_full = paired_finding(f"LatentSeek beats oracle best-of-{1 + plan.max_iters} (its most chains)", o["seek"],
                             o["full"], control=f"oracle best-of-{1 + plan.max_iters}", statistic="accuracy",
                             binary=True, seed=ctx.seed)
    headroom = room / n
    fixed = sum(f and not g for f, g in zip(o["seek"], o["start"]))
    broken = sum(g and not f for f, g in zip(o["seek"], o["start"]))
    shown = gain.is_effect if plan.paired else fixed > 0 and broken == 0
    verdict = "recovered" if headroom >= MIN_HEADROOM and shown else "failed"
    s = doc["summary"]
    details = {
        "organism": ORGANISM, "steps": list(plan.steps), "lr": plan.lr, "max_iters": plan.max_iters,
        "headroom": headroom, "headroom_ci": list(wilson(room, n)),
        "start_accuracy": sum(o["start"]) / n, "seek_accuracy": sum(o["seek"]) / n,
        "fixed": fixed, "broken": broken, "paired_test": plan.paired,
        "best_of_n_equal_chains": sum(o["matched"]) / n, "best_of_n_full": sum(o["full"]) / n,
        "seek_minus_best_of_n": vs.extra["diff"], "seek_minus_best_of_n_ci": vs.extra["diff_ci"],
        "seek_minus_best_of_n_p": vs.p, "mean_checked_chains": s["mean_checked_chains"],
        "mean_tokens": s["mean_tokens"], "mean_optimised": s["mean_optimised"],
        "error_places": error_places(doc, plan, ctx.seed), "more": [vs, vs_full],
    }
    how = "McNemar p < 0.05" if plan.paired else "quick: some problem fixed, none broken"
    return _check(gain, verdict, f"headroom >= {MIN_HEADROOM} and LatentSeek's accuracy above its start ({how}); "
                  "beside it, LatentSeek minus oracle best-of-N at equal chains with its interval", details)


def _null(ctx: SettingContext) -> Check:
    """No effect only when shown: LatentSeek's accuracy minus its start's within +-:data:`NULL_MARGIN`
    (:func:`~thinklens.latent.null_equivalence.null_verdict`; the TOST in the details as ``tost_accuracy``); the
    paired test's finding (McNemar) beside it."""
    plan = QUICK_NULL if ctx.quick else FULL
    doc = _seek(ctx, plan, "thinklens.latent.validation:coin_reward", "seek-coin")
    o = outcomes(doc)
    n = len(o["start"])
    gain = _gain(o, ctx.seed)
    fixed = sum(f and not g for f, g in zip(o["seek"], o["start"]))
    broken = sum(g and not f for f, g in zip(o["seek"], o["start"]))
    verdict, tost = null_verdict(o["seek"], o["start"], margin=NULL_MARGIN)
    details = {"organism": ORGANISM, "reward": "coin_reward (independent of correctness)", "lr": plan.lr,
               "steps": list(plan.steps), "start_accuracy": sum(o["start"]) / n, "seek_accuracy": sum(o["seek"]) / n,
               "fixed": fixed, "broken": broken, "mean_checked_chains": doc["summary"]["mean_checked_chains"],
               "tost_accuracy": tost}
    return _check(gain, verdict, f"a reward independent of correctness: LatentSeek's accuracy minus its start's on the "
                  f"same problems shown within +-{NULL_MARGIN:g} (paired TOST: its 90% interval inside the margin, else "
                  "failed; a loss fails as a gain does)", details)


SETTINGS = [
    Setting("latent-seek", "planted", "recovered", _planted, kind="benchmark",
            help="tiny-cot-short on 6-8 step problems (headroom: greedy wrong, a sample right), PSRM reward: accuracy "
            "above the greedy start (McNemar); LatentSeek minus oracle best-of-N at equal chains reported"),
    Setting("latent-seek", "null", "no-effect", _null,
            help=f"the same problems with a coin-flip reward (no information about correctness): accuracy within "
            f"+-{NULL_MARGIN:g} of the greedy start (paired TOST)"),
]
