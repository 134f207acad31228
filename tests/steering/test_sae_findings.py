"""SAE fidelity findings: planted and null settings give ``effect`` and ``no effect``, a CE recovered above 1 is
flagged, the per-row sums match the pooled means and a hand computation, and both SAE jobs' summaries carry them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from thinklens.calibration.findings import VERDICTS
from thinklens.engine.sites import Site
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job
from thinklens.steering.sae_fidelity import generated_targets, sae_fidelity
from thinklens.steering.sae_findings import format_l0, recovered_finding, sae_findings, variance_finding


def _per_row(n: int, *, sae_ce: np.ndarray, seed: int = 0, res: float = 1.0) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(5, 20, size=n).astype(float)
    clean = tokens * (1.0 + 0.2 * rng.random(n))
    zero = tokens * (5.0 + rng.random(n))
    return {"ce_clean": clean.tolist(), "ce_sae": (tokens * sae_ce).tolist(), "ce_zero": zero.tolist(),
            "kl_zero": (zero - clean).tolist(), "kl_sae": (tokens * sae_ce - clean).clip(0).tolist(),
            "res_ss": (tokens * res * (1 + 0.1 * rng.random(n))).tolist(), "tot_ss": (tokens * 4.0).tolist(),
            "tokens": tokens.astype(int).tolist()}


def test_planted_faithful_sae_is_an_effect():
    rng = np.random.default_rng(1)
    fs = sae_findings({"site": "resid_post.2", "l0": 32.0, "per_row": _per_row(40, sae_ce=1.5 + 0.1 * rng.random(40))})
    assert [(f.statistic, f.verdict) for f in fs] == [("CE loss recovered", "effect"), ("KL recovered", "effect"),
                                                       ("explained variance", "effect")]
    assert all(f.n == 40 and f.control_value == 0.0 and f.ci[0] <= f.value <= f.ci[1] for f in fs)
    assert fs[0].control == "zero ablation" and "flag" not in fs[0].extra and "L0 32:" in fs[2].claim


def test_null_sae_no_better_than_zero_ablation_is_no_effect():
    """An SAE whose spliced loss scatters around the zero-ablated one recovers nothing: the interval holds 0."""
    rng = np.random.default_rng(2)
    row = _per_row(40, sae_ce=np.zeros(40), res=4.0)
    zero, tokens = np.asarray(row["ce_zero"]), np.asarray(row["tokens"])
    row["ce_sae"] = (zero + tokens * rng.normal(0, 0.3, size=40)).tolist()  # as bad as ablation, give or take
    row["kl_sae"] = (np.asarray(row["kl_zero"]) + tokens * rng.normal(0, 0.3, size=40)).tolist()
    row["res_ss"] = (np.asarray(row["tot_ss"]) * (1 + rng.normal(0, 0.05, size=40))).tolist()  # EV about 0
    fs = sae_findings({"site": "s", "l0": 4.0, "per_row": row})
    assert [f.verdict for f in fs] == ["no effect"] * 3
    assert all(f.ci[0] < 0 < f.ci[1] for f in fs)


def test_ce_recovered_above_one_is_flagged_and_ceiling_is_said():
    row = _per_row(30, sae_ce=np.full(30, 0.5))  # the SAE beats the clean model (CE 0.5 < ~1.1 per token)
    ce = sae_findings({"site": "s", "l0": 8.0, "per_row": row})[0]
    assert ce.value > 1 and "above 1" in ce.claim and "better than the clean model" in ce.extra["flag"]
    flat = np.ones(20)
    f = recovered_finding("c", "CE loss recovered", flat, flat * 2, flat * 3, what_costs="cross-entropy")
    assert f.verdict == "at ceiling" and "nothing to recover" in f.extra["otherwise"]
    worse = recovered_finding("c", "CE loss recovered", flat * 3, flat * 4, flat, what_costs="cross-entropy")
    assert worse.value == pytest.approx(-0.5) and worse.verdict == "no effect" and "below 0" in worse.claim


def test_interval_is_a_bootstrap_of_the_pooled_ratio():
    """Oracle: the interval is the percentile interval of the pooled ratio over resampled rows (a loop)."""
    rng = np.random.default_rng(3)
    z, s, c = rng.random(25) + 3, rng.random(25) + 1, rng.random(25)
    f = recovered_finding("c", "CE loss recovered", z, s, c, seed=4, what_costs="x")
    idx = np.random.default_rng(4).integers(0, 25, size=(2000, 25))
    boots = [(z[i].sum() - s[i].sum()) / (z[i].sum() - c[i].sum()) for i in idx]
    assert f.ci == pytest.approx((np.quantile(boots, 0.025), np.quantile(boots, 0.975)))
    assert f.value == pytest.approx((z.sum() - s.sum()) / (z.sum() - c.sum()))
    ev = variance_finding(s, z, site="s", l0=3.0, where="w")
    assert ev.value == pytest.approx(1 - s.sum() / z.sum())


def test_bad_metrics_are_refused():
    from thinklens.errors import ThinklensError

    with pytest.raises(ThinklensError, match="per_row"):
        sae_findings({"site": "s", "ce_loss_recovered": 0.9})
    row = _per_row(5, sae_ce=np.ones(5))
    with pytest.raises(ThinklensError, match="the keys"):
        sae_findings({"per_row": {k: v for k, v in row.items() if k != "tot_ss"}})
    with pytest.raises(ThinklensError, match="one value per row"):
        sae_findings({"per_row": {**row, "res_ss": [1.0]}})


def test_format_l0():
    assert (format_l0(32.0), format_l0(32.0004), format_l0(7.26)) == ("32", "32", "7.3")


def test_per_row_sums_match_pooled_means_and_a_hand_computation(tiny_llama, random_sae):
    """The per-row CE sums add up to the pooled means; the per-row explained-variance sums equal a hand computation
    on each unpadded row's activations at the scored positions (a padded or prompt position would change them)."""
    rows = [([3, 4, 5], [6, 7]), ([8], [9, 10, 11, 12]), ([13, 14, 15, 16], [17])]
    m = sae_fidelity(tiny_llama, random_sae, rows, site="resid_post.0", batch_size=3)
    pr = m["per_row"]
    assert pr["tokens"] == [2, 4, 1] and sum(pr["tokens"]) == m["fidelity_tokens"]
    assert sum(pr["ce_sae"]) / m["fidelity_tokens"] == pytest.approx(m["ce_loss_with_sae"], rel=1e-6)
    xs = []
    for p, g in rows:
        acts = tiny_llama.capture([p + g], [Site("resid_post", 0)]).acts[Site("resid_post", 0)][0].double()  # [pos, d]
        mask = generated_targets([p], [g], width=len(p) + len(g))[0]
        xs.append(acts[mask])
    mean = torch.cat(xs).mean(0)
    with torch.no_grad():
        res = [float(((x - random_sae(x.float()).double()) ** 2).sum()) for x in xs]
    tot = [float(((x - mean) ** 2).sum()) for x in xs]
    assert pr["res_ss"] == pytest.approx(res, rel=1e-4) and pr["tot_ss"] == pytest.approx(tot, rel=1e-4)


def _check(summary: dict) -> None:
    assert summary["findings"]
    for f in summary["findings"]:
        assert {"claim", "n", "ci", "control", "control_value", "verdict"} <= set(f)
        assert f["verdict"] in VERDICTS and len(f["ci"]) == 2 and f["n"] > 0 and f["control"]


def test_sae_eval_summary_carries_findings(tiny_llama, trained_sae, word_texts, tmp_path):
    _, _, sae_dir = trained_sae
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(word_texts[:48]))
    run_job("sae-eval", model=tiny_llama, sae=str(sae_dir), data=str(data), n_texts=32, n_batches=1, fidelity_traces=12,
            max_new_tokens=8, out=tmp_path / "ev", progress=False, threads=1)
    summary = RunFolder.open(tmp_path / "ev").meta()["summary"]
    _check(summary)
    assert [f["statistic"] for f in summary["findings"]] == ["CE loss recovered", "KL recovered", "explained variance"]
    assert all(f["n"] == 12 for f in summary["findings"])


def test_sae_job_summary_carries_findings(tiny_llama, word_texts, tmp_path):
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(word_texts))
    run_job("sae", model=tiny_llama, data=str(data), site="resid_post.0", d_sae=64, k=4, n_texts=120,
            training_tokens=4_000, train_batch_size_tokens=512, store_batch_size_prompts=8, n_batches_in_buffer=4,
            n_eval_batches=1, eval_texts=32, stats_traces=0, fidelity_traces=12, max_new_tokens=8,
            out=tmp_path / "sae", progress=False, threads=1)
    summary = RunFolder.open(tmp_path / "sae").meta()["summary"]
    _check(summary)
    assert summary["findings"][2]["claim"].startswith("the SAE at resid_post.0 (L0 ")


def test_sae_job_on_stored_rows_reports_explained_variance(tmp_path):
    """Without a model (stored rows) the only finding is the explained variance on the held-out rows."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    rows = torch.randn(1500, 4, generator=g) @ torch.randn(4, 16, generator=g)  # rank 4: a 16-feature SAE can fit it
    save_file({"activations": rows}, str(tmp_path / "acts.safetensors"))
    summary = run_job("sae", model="", activations=str(tmp_path / "acts.safetensors"), site="resid_post.1", d_sae=16,
                      k=4, training_tokens=40_000, train_batch_size_tokens=512, lr=3e-3, eval_texts=200,
                      stats_traces=0, out=tmp_path / "run", progress=False, threads=1)
    _check(summary)
    (f,) = summary["findings"]
    assert f["statistic"] == "explained variance" and f["n"] == 200 and f["verdict"] == "effect"
    assert f["value"] == pytest.approx(summary["explained_variance"], abs=0.05)


def test_an_sae_with_most_features_dead_says_so(tmp_path):
    """An SAE with 65% dead features once went without a word. Past MAX_DEAD_SHARE of dead features the summary's
    warnings, the report, the headline and the explained-variance claim all say so; below it nothing is added. Here
    20 held-out rows can wake at most 20 of a k=1 SAE's 128 features: at least 84% are dead."""
    from safetensors.torch import save_file

    from thinklens.runs.jobs import get_job
    from thinklens.steering.sae_findings import MAX_DEAD_SHARE, dead_feature_warning

    g = torch.Generator().manual_seed(0)
    rows = torch.randn(200, 4, generator=g) @ torch.randn(4, 16, generator=g)
    save_file({"activations": rows}, str(tmp_path / "acts.safetensors"))
    summary = run_job("sae", model="", activations=str(tmp_path / "acts.safetensors"), site="resid_post.1", d_sae=128,
                      k=1, training_tokens=4096, train_batch_size_tokens=256, lr=3e-3, eval_texts=20,
                      stats_traces=0, out=tmp_path / "run", progress=False, threads=1)
    assert summary["held_out_rows"] == 20 and summary["dead_features"] >= 108
    (warning,) = summary["warnings"]
    assert f"{summary['dead_features']} of 128 features" in warning and "dead" in warning
    assert warning in summary["findings"][0]["claim"] and summary["findings"][0]["extra"]["warning"] == warning
    job = get_job("sae")
    assert f"warning: {warning}" in job.report(summary)
    assert "most features dead" in job.headline(summary, tmp_path / "run")
    at_bound = {"dead_features": int(128 * MAX_DEAD_SHARE), "d_sae": 128}
    assert dead_feature_warning(at_bound) is None and dead_feature_warning({**at_bound, "dead_features": 65})
    fs = sae_findings({"site": "resid_post.2", "l0": 8.0, "per_row": _per_row(30, sae_ce=np.full(30, 1.5)),
                       "dead_features": 333, "d_sae": 512})
    assert "333 of 512 features (65%) are dead" in fs[2].claim and all("dead" not in f.claim for f in fs[:2])


def test_a_recovery_within_rounding_of_one_or_zero_is_not_flagged():
    """CE recovered 1.00008 (an SAE as good as the clean model, float32 rounding) is no symptom."""
    flat = np.ones(20)
    at_one = recovered_finding("c", "CE loss recovered", flat * 3, flat * (1 - 0.00008 * 2), flat, what_costs="x")
    assert at_one.value == pytest.approx(1.00008) and "flag" not in at_one.extra and "above 1" not in at_one.claim
    at_zero = recovered_finding("c", "CE loss recovered", flat * 3, flat * (3 + 0.00008 * 2), flat, what_costs="x")
    assert at_zero.value == pytest.approx(-0.00008) and "flag" not in at_zero.extra
    above = recovered_finding("c", "CE loss recovered", flat * 3, flat * (1 - 0.01 * 2), flat, what_costs="x")
    assert above.value == pytest.approx(1.01) and "above 1" in above.extra["flag"]
