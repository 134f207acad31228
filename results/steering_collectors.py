"""The SAE's, feature steering's, hybrid steering's and reasoning vectors' summaries (``results/collect.py``)."""

from __future__ import annotations

from typing import Any

from collect_core import RECORDS, ROOT, collector, mean, read_json, show, summary, zoo_record

SAE_DIR = ROOT / "data" / "saes" / "tiny-think-resid_post.2-topk32"


@collector("sae")
def sae() -> dict[str, Any]:
    """The committed SAE's held-out metrics (sae-lens's evaluation, written by the sae job beside the weights)."""
    held = read_json(SAE_DIR / "heldout_metrics.json")
    cfg = read_json(SAE_DIR / "thinklens_metrics.json")
    config = {k: cfg[k] for k in ("site", "architecture", "k", "d_sae", "training_tokens", "n_texts")}
    return {"command": "thinklens run sae --model tiny-think --site resid_post.2 --d-sae 1024 --k 32",
            "date": "2026-11-29", "source": show(SAE_DIR), "config": config,
            "values": {k: v for k, v in held.items() if isinstance(v, (int, float))}}


def pruned(obj: Any) -> Any:
    """A result without its texts (sample completions, contexts): only what a README table can quote."""
    if isinstance(obj, dict):
        return {k: pruned(v) for k, v in obj.items() if k not in ("samples", "top_contexts", "texts", "examples")}
    if isinstance(obj, list):
        return [pruned(v) for v in obj if not isinstance(v, str) or len(v) < 40]
    return obj


@collector("steer")
def steer() -> dict[str, Any]:
    """Feature steering against its equal-norm baselines over 3 seeds (the steer job's table and choices), from its
    committed record ``results/records/steer-readme-steer``."""
    run = RECORDS / "steer-readme-steer"
    res = read_json(run / "results" / "steer.json")
    return summary("thinklens run steer --sae data/saes/tiny-think-resid_post.2-topk32 --n-seeds 3 --threads 1 --run-id "
                   "readme-steer; python results/collect.py --record runs/steer/readme-steer steer-readme-steer",
                   [run], read_json(run / "config.json"),
                   {"rows": pruned(res["rows"]), "chosen": pruned(res["chosen"]), "max_new_tokens": res["max_new_tokens"]})


@collector("hybrid")
def hybrid() -> dict[str, Any]:
    """Hybrid steering over 3 seeds: the mean +- std per mode, each seed's accuracies, and the token-choice rule, from
    its committed record ``results/records/hybrid-readme-hybrid``."""
    run = RECORDS / "hybrid-readme-hybrid"
    per_seed = read_json(run / "results" / "hybrid_seeds.json")
    return summary("thinklens run hybrid --n-seeds 3 --n-eval 200 --threads 1 --run-id readme-hybrid; python "
                   "results/collect.py --record runs/hybrid/readme-hybrid hybrid-readme-hybrid", [run],
                   read_json(run / "config.json"),
                   {"summary": read_json(run / "results" / "hybrid_summary.json"),
                    "per_seed": {seed: {mode: {k: v for k, v in r.items() if k != "correct"} if isinstance(r, dict) else r
                                        for mode, r in pruned(modes).items()} for seed, modes in per_seed.items()},
                    "base_own_style": pruned(read_json(run / "results" / "hybrid.json")["base_own_style"]),
                    "info": read_json(run / "results" / "hybrid_info.json")})


GRPO_SEEDS = (10000, 30000, 40000)


@collector("reasoning_vectors")
def reasoning_vectors() -> dict[str, Any]:
    """tiny-grpo against its parent tiny-cot on held-out problems (3 seeds), and v = tiny-grpo - tiny-cot added to
    tiny-think (alpha sweep per tensor group, random-direction control) and to tiny-cot itself (alpha 1 is tiny-grpo); from
    the committed records ``results/records/zoo-eval-grpo-heldout-*`` and ``results/records/reasoning-vector-rv-*``."""
    evals = {s: RECORDS / f"zoo-eval-grpo-heldout-{s}" for s in GRPO_SEEDS}
    by_seed = {s: {r["model"]: r["accuracy"] for r in read_json(run / "results" / "zoo_eval.json")} for s, run in evals.items()}
    steps = [str(k) for k in range(1, 9)]
    pooled = {m: {k: mean([by_seed[s][m][k] for s in GRPO_SEEDS]) for k in steps} for m in ("tiny-cot", "tiny-grpo")}
    for m in pooled:
        pooled[m] |= {"1-4": mean([pooled[m][k] for k in "1234"]), "5": pooled[m]["5"],
                      "6-8": mean([pooled[m][k] for k in "678"]), "1-8": mean([pooled[m][k] for k in steps])}
    gain = {k: pooled["tiny-grpo"][k] - pooled["tiny-cot"][k] for k in pooled["tiny-cot"]}
    sweeps = {}
    for key, rid in (("tiny-think", "rv-think"), ("tiny-cot", "rv-cot")):
        run = RECORDS / f"reasoning-vector-{rid}"
        rows = read_json(run / "results" / "alpha_sweep.json")
        sweeps[key] = {"rows": [{k: r[k] for k in ("group", "alpha", "accuracy", "by_steps")} for r in rows],
                       "vector": read_json(run / "results" / "vector.json"), "config": read_json(run / "config.json")}
    grpo = zoo_record("tiny-grpo")
    training = {k: grpo[k] for k in ("init", "steps", "train_cpu_s", "train_wall_s")} | {
        "grpo": grpo["grpo"], "train_cpu_minutes": grpo["train_cpu_s"] / 60}
    runs = [*evals.values(), RECORDS / "reasoning-vector-rv-think", RECORDS / "reasoning-vector-rv-cot"]
    command = ("thinklens run grpo; thinklens run zoo-eval --models tiny-cot,tiny-grpo --n-eval 100 --seed S --threads 1 --run-id "
               "grpo-heldout-S (S = 10000, 30000, 40000); thinklens run reasoning-vector --threads 1 --run-id rv-think; "
               "thinklens run reasoning-vector --model tiny-cot --groups all --threads 1 --run-id rv-cot; python "
               "results/collect.py --record runs/KIND/ID KIND-ID for each of the five runs")
    return summary(command, runs, {"seeds": list(GRPO_SEEDS), "n_per_steps": 100},
                   {"heldout": {"by_seed": by_seed, "pooled": pooled, "gain": gain}, "sweeps": sweeps,
                    "training": training}, ("data/zoo/tiny-grpo/zoo.json",))
