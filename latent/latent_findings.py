"""The latent findings: the latent table's (every latent method against the matched No-CoT row on the same problems,
McNemar, :func:`baseline_mismatch`; a No-CoT trained otherwise is compared too, said to be unmatched and never
first; every row's accuracy with its Wilson interval), LatentSeek's (:func:`seek_findings`: against the CoT chain it
starts from and against oracle best-of-N at equal compute, both paired on the same problems) and the trainers'
(:func:`training_findings`: the held-out accuracy against the majority guess, the training-loss change).

Example:
    >>> trained = {"parent": "tiny-cot", "steps": 15000, "problems": "3-4 steps"}
    >>> rows = [{"label": "No-CoT SFT", "method": "sft", "no_cot": True, "problems": "3-4 steps", "accuracy": 0.1,
    ...          "n": 20, "training": trained},
    ...         {"label": "CODI", "method": "codi", "problems": "3-4 steps", "accuracy": 0.9, "n": 20, "training": trained}]
    >>> correct = {"No-CoT SFT": [False] * 18 + [True] * 2, "CODI": [True] * 18 + [False] * 2}
    >>> [(f["verdict"], f["extra"]["baseline"]) for f in table_findings(rows, correct)]
    [('effect', 'matched')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from thinklens.calibration.findings import MAJORITY, Finding, accuracy_finding, findings_doc, majority_correct, paired_finding
from thinklens.calibration.findings import window_change_finding as window_change_finding  # importable here, as before
from thinklens.calibration.stats import wilson
from thinklens.latent.methods import METHODS, method_of

if TYPE_CHECKING:
    from thinklens.runs.jobs import Job, JobContext

#: Rows that are baselines, not latent methods compared with No-CoT.
BASELINES = ("direct", "cot", "explicit", "best_of_n", "latentseek")


def add_intervals(rows: list[dict[str, Any]]) -> None:
    """Every row's ``ci``: the Wilson 95% interval of its accuracy over its ``n`` problems."""
    for r in rows:
        k = int(round(r["accuracy"] * r["n"]))
        r["ci"] = list(wilson(k, int(r["n"])))


def is_no_cot(row: Mapping[str, Any]) -> bool:
    """Whether a table row answers straight after the prompt: the No-CoT rows every latent method is compared with
    (a zoo ``direct`` model, or an SFT baseline trained on answers only, ``no_cot``, such as the matched No-CoT).

    Example:
        >>> is_no_cot({"method": "direct"}), is_no_cot({"method": "sft", "no_cot": True}), is_no_cot({"method": "sft"})
        (True, True, False)
    """
    return row["method"] == "direct" or bool(row.get("no_cot"))


def _parent_name(name: Any) -> str | None:
    """A parent as the matching rule compares it: a zoo model's folder (``data/zoo/tiny-cot``) by its zoo name."""
    if not name:
        return None
    text = str(name).rstrip("/")
    return text.rsplit("/", 1)[-1] if "data/zoo/" in text else text


def training_of(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """How a table row's model was trained, as :func:`baseline_mismatch` reads it: the model its training started from
    (``parent``: a latent trainer's first start model, a zoo recipe's ``init``), its optimizer steps since then
    (``steps``: a continued run's total) and its training problems (``problems``: the step range or the data set).

    Args:
        meta: the model folder's latent.json (a latent trainer's model) or zoo.json (a zoo recipe's).

    Returns None for a folder with neither (a hub model: its training is not known here).

    Example:
        >>> training_of({"init": "tiny-pre", "steps": 250, "recipe": {"task": {"min_steps": 1, "max_steps": 8}}})
        {'parent': 'tiny-pre', 'steps': 250, 'problems': '1-8 steps'}
        >>> training_of({"method": "sft", "parent": "tiny-cot", "total_steps": 15000,
        ...              "config": {"method": "sft", "min_steps": 3, "max_steps": 4, "data": ""}})
        {'parent': 'tiny-cot', 'steps': 15000, 'problems': '3-4 steps'}
    """
    if "method" in meta:  # a latent trainer's model
        saved = meta.get("config") or {}
        parent = meta.get("parent") or (meta.get("start_model") or {}).get("name") or saved.get("model")
        steps = meta.get("total_steps")
        if steps is None:
            steps = _phase_steps(meta["method"], saved)
        where = saved.get("data") or f"{saved.get('min_steps')}-{saved.get('max_steps')} steps"
        return {"parent": _parent_name(parent), "steps": steps, "problems": where}
    if "recipe" in meta or "init" in meta:  # a zoo recipe's model
        task = (meta.get("recipe") or {}).get("task") or {}
        where = f"{task.get('min_steps')}-{task.get('max_steps')} steps" if task else None
        return {"parent": _parent_name(meta.get("init")), "steps": meta.get("steps"), "problems": where}
    return None


def _phase_steps(method: str, saved: Mapping[str, Any]) -> int | None:
    """The optimizer steps of a saved latent model's config: the sum of its method's training phases."""
    m = METHODS.get(method)
    if m is None:
        return None
    names = {f.name for f in dataclasses.fields(m.config)}
    # null fields (an older latent.json's "data": null) take the config's defaults
    cfg = m.config(**{k: tuple(v) if isinstance(v, list) else v for k, v in saved.items() if k in names and v is not None})
    return sum(p.steps for p in m.module.train_phases(cfg))


def baseline_mismatch(row: Mapping[str, Any], baseline: Mapping[str, Any]) -> str:
    """Why the No-CoT row ``baseline`` is not matched to the method row ``row`` ("" when it is; each difference as the
    baseline's, not the method's). It is matched when it was trained from the same parent, on the same problems, for
    at least the method's optimizer steps (a baseline trained longer can only make the method's win harder; one
    trained less, or from elsewhere, can make it easier).

    Example:
        >>> codi = {"label": "CODI", "training": {"parent": "tiny-cot", "steps": 15000, "problems": "3-4 steps"}}
        >>> baseline_mismatch(codi, {"training": {"parent": "tiny-cot", "steps": 15000, "problems": "3-4 steps"}})
        ''
        >>> baseline_mismatch(codi, {"training": {"parent": "tiny-pre", "steps": 250, "problems": "1-8 steps"}})
        'trained from tiny-pre, not tiny-cot; 250 steps, not 15000; on 1-8 steps problems, not 3-4 steps'
    """
    mine, theirs = row.get("training"), baseline.get("training")
    if not mine or not theirs:
        return "how it or the method was trained is not known"
    why = []  # each difference as "the baseline's, not the method's"
    if theirs.get("parent") != mine.get("parent"):
        why.append(f"trained from {theirs.get('parent')}, not {mine.get('parent')}")
    if theirs.get("steps") is None or mine.get("steps") is None or theirs["steps"] < mine["steps"]:
        why.append(f"{theirs.get('steps')} steps, not {mine.get('steps')}")
    if theirs.get("problems") != mine.get("problems"):
        why.append(f"on {theirs.get('problems')} problems, not {mine.get('problems')}")
    return "; ".join(why)


def table_findings(rows: Sequence[Mapping[str, Any]], correct: Mapping[str, Sequence[bool]], *,
                   seek: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Findings of a latent table: every latent method (and token-level SFT row) against every No-CoT row on the same
    problems (:func:`is_no_cot`; McNemar), and LatentSeek against its start and oracle best-of-N.

    The matched No-CoT comparisons come first (:func:`baseline_mismatch`; ``extra["baseline"]`` is ``matched``); a
    method with no matched No-CoT on its problems gets a ``too few samples`` finding in its place (no matched unit to
    compare: the table needs one); comparisons with an unmatched No-CoT come last, say so in their claim and give
    why in ``extra["unmatched"]``, so that none is ever the run's headline.

    Args:
        rows: the table's rows (label, method, problems, accuracy, n; ``training`` from :func:`training_of`).
        correct: row label -> per-problem correctness, in the table's problem order.
        seek: the LatentSeek run's per-problem ``original_correct`` / ``final_correct`` lists and its
            summary's ``baseline`` (oracle best-of-N by temperature), when the table has LatentSeek rows.
    """
    matched: list[Finding] = []
    unmatched: list[Finding] = []
    controls = [r for r in rows if is_no_cot(r)]
    for r in rows:
        if r["method"] in BASELINES or is_no_cot(r):
            continue
        found_matched = False
        for direct in controls:
            a, b = correct.get(r["label"]), correct.get(direct["label"])
            if r["problems"] != direct["problems"] or a is None or b is None or len(a) != len(b):
                continue
            why = baseline_mismatch(r, direct)
            said = f" (an unmatched No-CoT: {why})" if why else " (the matched No-CoT)"
            f = paired_finding(f"{r['label']} beats {direct['label']} on the same {r['problems']} problems{said}",
                               [float(x) for x in a], [float(x) for x in b], control=direct["label"],
                               statistic="accuracy", binary=True, ceiling=1.0, ceiling_margin=0.0)
            f.extra.update(baseline="unmatched" if why else "matched", **({"unmatched": why} if why else {}))
            (unmatched if why else matched).append(f)
            found_matched = found_matched or not why
        if not found_matched:
            matched.append(_no_matched_baseline(r))
    found = matched
    if seek:
        found += seek_findings(seek["original_correct"], seek["final_correct"], baseline=seek.get("baseline"))
    return findings_doc(found + unmatched)


def _no_matched_baseline(row: Mapping[str, Any]) -> Finding:
    """The finding of a method that has no matched No-CoT in its table: nothing to compare (n = 0)."""
    t = row.get("training") or {}
    like = (f"from {t.get('parent')}, at least {t.get('steps')} steps on {t.get('problems')} problems" if t
            else "its training is not known")
    k, n = int(round(row["accuracy"] * row["n"])), int(row["n"])
    return Finding(f"{row['label']} beats a matched No-CoT on the same {row['problems']} problems", "accuracy",
                   float(row["accuracy"]), wilson(k, n), 0, "no matched No-CoT in this table", None, "too few samples",
                   extra={"baseline": "missing", "otherwise": f"{row['label']} has no matched No-CoT in this table (one "
                          f"trained like it: {like}; the zoo's is tiny-nocot): not compared"})


def seek_findings(original_correct: Sequence[bool], final_correct: Sequence[bool], *,
                  baseline: Mapping[str, Any] | None = None,
                  oracle_correct: Mapping[str, Sequence[bool | None]] | None = None) -> list[Finding]:
    """LatentSeek's findings: its accuracy after optimisation against the greedy CoT chain it starts from (McNemar on
    the same problems), and against the oracle best-of-N sampling of each temperature at equal compute.

    Args:
        original_correct, final_correct: per problem, the greedy chain's and LatentSeek's correctness.
        baseline: temperature -> the summary's oracle best-of-N (``best_of_n``, ``n``, ``samples``).
        oracle_correct: temperature -> per problem whether any of its N sampled chains is right (None where a
            problem has no baseline): the comparison is then paired (McNemar on those problems); without it, an
            unpaired Wilson comparison with ``baseline``'s counts.

    Every finding that is not an effect says why in its own words (``extra["otherwise"]``): the control does better
    (a control that wins is ``no effect``, never ``at ceiling``), the control is at 1.0 (``at ceiling``), or it leaves
    too few problems to fix (``no headroom``).

    Example:
        >>> fs = seek_findings([False] * 20, [True] * 11 + [False] * 9, oracle_correct={"1.0": [True] * 10 + [False] * 10})
        >>> [(f.statistic, f.verdict) for f in fs]
        [('accuracy', 'effect'), ('accuracy', 'no effect')]
        >>> f = seek_findings([True] * 20, [True] * 10 + [False] * 10, oracle_correct={"1.0": [True] * 20})[1]
        >>> f.verdict, f.extra["otherwise"]
        ('no effect', 'oracle best-of-N (T=1.0, same problems) does better than LatentSeek')
    """
    before, after = [float(x) for x in original_correct], [float(x) for x in final_correct]
    found = [paired_finding("LatentSeek corrects the CoT chain it starts from", after, before,
                           control="greedy CoT (same problems)", statistic="accuracy", binary=True, ceiling=1.0)]
    for t, b in (baseline or {}).items():
        if not b:
            continue
        claim = f"LatentSeek beats oracle best-of-{b['samples']} sampling (T={t}) at equal compute"
        oracle = (oracle_correct or {}).get(t)
        if oracle is not None:
            keep = [i for i, o in enumerate(oracle) if o is not None]
            found.append(paired_finding(claim, [after[i] for i in keep], [float(oracle[i]) for i in keep],
                                        control=f"oracle best-of-{b['samples']} (T={t}, same problems)",
                                        statistic="accuracy", binary=True, ceiling=1.0))
        else:
            found.append(accuracy_finding(claim, int(sum(after)), len(after), control=f"oracle best-of-{b['samples']} (T={t})",
                                          control_k=int(round(b["best_of_n"] * b["n"])), control_n=int(b["n"])))
    for t, oracle in (oracle_correct or {}).items():  # oracle outcomes without a summary entry
        if baseline and t in baseline:
            continue
        keep = [i for i, o in enumerate(oracle) if o is not None]
        if keep:
            found.append(paired_finding(f"LatentSeek beats oracle best-of-N sampling (T={t}) at equal compute",
                                        [after[i] for i in keep], [float(oracle[i]) for i in keep],
                                        control=f"oracle best-of-N (T={t}, same problems)", statistic="accuracy",
                                        binary=True, ceiling=1.0))
    return [_seek_words(f) for f in found]


def _seek_words(f: Finding) -> Finding:
    """``f`` with what its verdict means for LatentSeek in ``extra["otherwise"]`` (one meaning per verdict word)."""
    if f.verdict == "effect":
        return f
    if f.extra.get("control_wins"):
        why = f"{f.control} does better than LatentSeek"
    elif f.verdict == "at ceiling":
        why = f"{f.control} is already at 1.0: nothing above it to show"
    elif f.verdict == "no headroom":
        why = f"{f.control} leaves too few problems to fix for any gain to reach significance"
    elif f.verdict == "too few samples":
        why = f"too few problems to compare LatentSeek with {f.control}"
    else:
        why = f"LatentSeek not shown to beat {f.control}"
    return dataclasses.replace(f, extra={**f.extra, "otherwise": why})


def training_findings(cfg: Any, metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A trainer's findings: the trained model's held-out accuracy (all evaluated groups pooled) against the majority
    guess per group on the same problems (per-problem outcomes are not kept: an unpaired Wilson comparison,
    conservative), when the run evaluated one; and the training loss of its last phase (its first window against
    its last, :func:`window_change_finding`).

    Args:
        cfg: the trainer's config (its ``n_eval`` and problem settings name the evaluated problems).
        metrics: what :func:`thinklens.latent.training_loop.train_latent` returned (``history``, ``eval``).
    """
    from thinklens.latent.training_loop import evaluation_problems  # lazy: CLI start-up (torch)

    label = method_of(cfg).label
    found = []
    ev = metrics.get("eval")
    if ev:
        problems = evaluation_problems(cfg)
        acc = {str(k): v for k, v in ev["accuracy"].items()}
        right = sum(round(acc[str(g)] * len(ps)) for g, ps in problems.items() if str(g) in acc)
        golds = [p.answer for g, ps in problems.items() if str(g) in acc for p in ps]
        groups = [g for g, ps in problems.items() if str(g) in acc for _ in ps]
        guess = sum(majority_correct(golds, groups))
        f = accuracy_finding(f"the trained {label} model beats a majority guess on held-out problems", right, len(golds),
                             control=f"{MAJORITY} per {'step count' if 'all' not in acc else 'problem set'}",
                             control_k=guess, control_n=len(golds))
        f.extra.update(otherwise=f"the trained {label} model not shown to beat guessing the most frequent answer",
                       groups=list(acc))
        found.append(f)
    history = list(metrics.get("history") or [])
    if history:
        phase = history[-1]["phase"]
        losses = [h["loss"] for h in history if h["phase"] == phase]
        found.append(window_change_finding(f"{label} training loss falls during phase {phase}", losses,
                                           statistic="loss change (last - first window)", higher_is_effect=False,
                                           otherwise=f"{label} training loss not shown to fall in phase {phase}"))
    return findings_doc(found)


def with_training_findings(job: "Job") -> "Job":
    """``job`` whose summary also holds :func:`training_findings` (the trainer finishes the run itself, so the job's
    ``summary`` hook is not called: the run is finished again with the findings added)."""

    def run(config: Any, ctx: "JobContext") -> dict[str, Any]:
        metrics = job.run(config, ctx)
        if ctx.shards.is_main:
            done = ctx.run.meta().get("summary") or {}
            ctx.run.finish({**done, "findings": training_findings(config, metrics)})
        return metrics

    run.__doc__ = job.run.__doc__
    return dataclasses.replace(job, run=run)
