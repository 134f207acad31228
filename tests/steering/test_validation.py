"""The SAE and steering settings of `thinklens run validate` (steering/validation.py), quick versions, and the
mutants their statistics kill."""

from __future__ import annotations

import pytest
import torch

from thinklens.calibration.controls import SettingContext
from thinklens.errors import ThinklensError
from thinklens.steering import validation as v

SETTINGS = {s.key: s for s in v.SETTINGS}


def _ctx(tmp_path) -> SettingContext:
    torch.set_num_threads(1)
    return SettingContext(quick=True, seed=0, workdir=tmp_path, threads=1, progress=False)


def test_sae_planted_quick(tmp_path):
    """The sae job (--activations) recovers a planted 2x-overcomplete dictionary: mean best cosine >= 0.9."""
    setting = SETTINGS["sae/planted"]
    check = setting.run(_ctx(tmp_path))
    assert check.verdict == setting.expected, check
    assert check.value >= 0.9 and check.ci[0] <= check.value <= check.ci[1] and check.n == 64
    assert check.details["share_recovered"] >= 0.8


def test_sae_null_quick(tmp_path):
    """Gaussian rows: the SAE learns them (held-out explained variance above rank-k PCA's) and its decoder matches a
    random reference dictionary at chance, shown by a TOST within the margin stated beforehand. Mutants killed (bench/
    mutants.py): an SAE saved with a random decoder (explained variance far below 0) and one that learns nothing
    (learning rate 0: explained variance ~0.02, below PCA's ~0.125) -- both score chance on the cosines, as the
    committed statistic did (0.3727 full size), so only the fit requirement catches them."""
    setting = SETTINGS["sae/null"]
    check = setting.run(_ctx(tmp_path))
    assert check.verdict == setting.expected, (check.value, check.ci, check.details["fit"], check.details["why_failed"])
    fit = check.details["fit"]
    assert fit["fits"] and fit["gain_ci"][0] > 0 and fit["explained_variance"] > fit["pca_explained_variance"]
    assert check.details["equivalent"] and -v.NULL_MARGIN < check.ci[0] <= check.value <= check.ci[1] < v.NULL_MARGIN
    assert check.details["mean_best_cosine"] < 0.7 and check.n == 64


def _null_inputs(seed: int = 0):
    spec = v.PlantedDictionary(d=16, n_features=256, p_fire=0.02, n_rows=4000)
    reference, _ = v.planted_rows(spec, seed)
    train, held = v.gaussian_rows(spec, seed + 1), v.gaussian_rows(spec, seed + 2)
    return spec, reference, train, held


class _LinearSAE(torch.nn.Module):
    """A stand-in SAE: reconstruction ``(x - mu) @ P + mu`` and a decoder ``W_dec``."""

    def __init__(self, proj, mu, decoder):
        super().__init__()
        self.proj, self.mu, self.W_dec = proj, mu, torch.nn.Parameter(decoder)

    def forward(self, x):
        return (x - self.mu) @ self.proj + self.mu


def test_null_check_needs_the_fit_and_equivalence():
    """The null passes only when the SAE fits its rows AND its cosines equal chance within the margin (TOST): a decoder
    at chance that does not fit fails (a random decoder, an SAE that learned nothing); a decoder holding the reference
    dictionary fails however well it fits."""
    spec, reference, train, held = _null_inputs()
    g = torch.Generator().manual_seed(5)
    random_decoder = torch.randn(64, spec.d, generator=g)
    identity = v.fit_over_pca(_LinearSAE(torch.eye(spec.d), 0.0, random_decoder), train, held, k=4, seed=0)
    assert identity["fits"] and identity["explained_variance"] == pytest.approx(1.0)
    at_chance = v.null_check(random_decoder, reference, identity, seed=1, details={})
    assert at_chance.verdict == "no-effect" and at_chance.details["equivalent"], at_chance
    nothing = v.fit_over_pca(_LinearSAE(torch.zeros(spec.d, spec.d), train.mean(0), random_decoder), train, held, k=4, seed=0)
    assert not nothing["fits"] and abs(nothing["explained_variance"]) < 0.05 and nothing["pca_explained_variance"] > 0.15
    failed = v.null_check(random_decoder, reference, nothing, seed=1, details={})
    assert failed.verdict == "failed" and "did not learn" in failed.details["why_failed"][0]
    leaked = v.null_check(torch.cat([reference, random_decoder]), reference, identity, seed=1, details={})
    assert leaked.verdict == "failed" and leaked.value > 0.3  # a "dictionary" found in dictionary-free rows


def test_best_cosine_is_per_true_feature():
    """Mutant killed: the best cosine taken per SAE feature (max over true features) instead of per true feature. A
    decoder made of copies of one true feature matches that feature perfectly and no other: per true feature the
    mean is low (failed), per SAE feature it would be 1.0 (recovered)."""
    g = torch.Generator().manual_seed(0)
    true = torch.nn.functional.normalize(torch.randn(16, 8, generator=g), dim=1)
    decoder = true[[0] * 32] * 3.0  # unnormalised copies: cosines, not dot products
    best = v.best_cosines(true, decoder)
    assert best[0] == pytest.approx(1.0) and float(best.mean()) < 0.9
    mutant = (torch.nn.functional.normalize(decoder, dim=1) @ true.T).max(dim=1).values  # per SAE feature
    assert float(mutant.mean()) == pytest.approx(1.0)
    assert v.recovery_check(best, seed=0, details={}).verdict == "failed"
    full = v.best_cosines(true, torch.cat([true * 2.0, decoder]))
    assert v.recovery_check(full, seed=0, details={}).verdict == "recovered"


def test_recovery_needs_both_the_mean_and_the_share():
    """Mutant killed: recovery judged by the mean best cosine alone. 70% of the true features found exactly and 30%
    at cosine 0.7 give a mean of 0.91 (above the 0.9 bar) but only 70% of the features at 0.9 (below the 80% bar)."""
    best = torch.tensor([1.0] * 7 + [0.7] * 3, dtype=torch.float64)
    assert float(best.mean()) >= v.RECOVERY_COSINE and float((best >= v.RECOVERY_COSINE).double().mean()) < v.RECOVERY_SHARE
    assert v.recovery_check(best, seed=0, details={}).verdict == "failed"
    most = torch.tensor([1.0] * 8 + [0.7] * 2, dtype=torch.float64)  # 80% at 0.9, mean 0.94: both bars met
    assert v.recovery_check(most, seed=0, details={}).verdict == "recovered"


def test_planted_rows_follow_the_spec():
    """The planted rows are sums of unit dictionary rows with the stated firing rate (the setting's ground truth)."""
    spec = v.PlantedDictionary(d=16, n_features=48, p_fire=0.1, n_rows=4000)
    dictionary, rows = v.planted_rows(spec, seed=1)
    assert dictionary.shape == (48, 16) and rows.shape == (4000, 16)
    assert torch.allclose(dictionary.norm(dim=1), torch.ones(48))
    mean_sq = float(rows.pow(2).sum(1).mean())
    null = v.gaussian_rows(spec, seed=2)
    assert float(null.pow(2).sum(1).mean()) == pytest.approx(mean_sq, rel=0.15)  # same scale, no dictionary


def test_sae_job_trains_on_an_activation_store(tmp_path):
    """The sae job's --activations input path reads an ActivationStore folder (no model loaded) and writes an
    sae-lens folder whose metrics are on held-out rows."""
    from thinklens.engine.activation_store import ActivationStore
    from thinklens.engine.sites import Site
    from thinklens.runs.jobs import run_job

    torch.set_num_threads(1)
    _, rows = v.planted_rows(v.PlantedDictionary(d=16, n_features=32, p_fire=0.1, n_rows=3000), seed=0)
    store = ActivationStore(tmp_path / "store")
    with store.writer() as w:
        w.add({Site("resid_post", 1): rows}, meta=[{} for _ in range(len(rows))])
    summary = run_job("sae", model="", activations=str(tmp_path / "store"), site="resid_post.1", d_sae=64, k=4,
                      training_tokens=100_000, train_batch_size_tokens=512, lr=3e-3, eval_texts=300, stats_traces=0,
                      out=tmp_path / "run", progress=False, threads=1)
    from thinklens.steering.sae import load_sae

    sae = load_sae(summary["sae"])
    assert sae.cfg.d_in == 16 and sae.cfg.metadata.thinklens_site == "resid_post.1"
    assert summary["held_out_rows"] == 300 and summary["n_rows"] == 2700 and 0.5 < summary["explained_variance"] <= 1
    with pytest.raises(ThinklensError, match="sites stored here|one of resid_post.1"):
        run_job("sae", model="", activations=str(tmp_path / "store"), site="resid_post.3", out=tmp_path / "bad",
                progress=False)


def test_monotone():
    """A step down whose Wilson intervals are apart breaks monotonicity; noise inside the intervals does not."""
    assert v.monotone([(1.0, 30, 50), (-1.0, 2, 50), (0.0, 10, 50)])
    assert v.monotone([(-1.0, 12, 50), (0.0, 10, 50), (1.0, 30, 50)])
    assert not v.monotone([(-1.0, 45, 50), (0.0, 10, 50), (1.0, 30, 50)])
    # tiny-overthink's full sweep: unsteered at the ceiling, any added norm (c=0.5) disrupts the re-check rounds for the
    # feature and the random feature alike; the excess over the random feature is still monotone
    feature = [(-1.0, 113, 200), (-0.5, 136, 200), (0.0, 189, 200), (0.5, 151, 200), (1.0, 198, 200)]
    random = [(-1.0, 180, 200), (-0.5, 179, 200), (0.0, 189, 200), (0.5, 150, 200), (1.0, 0, 200)]
    assert not v.monotone(feature) and v.monotone(feature, random)
    # mutant killed: a feature that does no more than the random feature at the top is not monotone in excess
    assert not v.monotone(feature[:4] + [(1.0, 60, 200)], random[:4] + [(1.0, 190, 200)])


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
def test_steer_null_word_quick(tmp_path):
    """steer --word alternatively on tiny-r1 (which never writes it) refuses: no feature is chosen among zeros."""
    setting = SETTINGS["steer/null-word"]
    check = setting.run(_ctx(tmp_path))
    assert check.verdict == setting.expected, check
    assert check.value == 0.0 and "refusal" in check.details and v.NULL_WORD in check.details["refusal"]


@pytest.mark.slow  # an organism-level quick setting (tests/README.md: tiers)
def test_steer_planted_quick(tmp_path):
    """On the overthinking organism, the setting runs every arm (the difference of means included) on the scale grid
    and, as measured (steering/validation.py), fails: the wait feature of resid_post.1 does not move the wait
    rate beyond the random feature at any coefficient, and the check says why."""
    from thinklens.zoo.registry import zoo_dir

    if not (zoo_dir() / v.STEER_ORGANISM / "zoo.json").is_file():
        pytest.skip(f"{v.STEER_ORGANISM} is not trained yet (thinklens run zoo-train --model {v.STEER_ORGANISM})")
    setting = SETTINGS["steer/planted"]
    check = setting.run(_ctx(tmp_path))
    assert check.details["diff_of_means_run"] and check.details["mode"] == "scale", check
    assert check.verdict == "failed" and check.details["why_failed"] and check.details["beyond_random_at"] == [], check


def test_steer_planted_says_what_is_missing(monkeypatch):
    """While the organism is not trained, the setting fails with what is missing and the command that trains it."""
    with pytest.raises(ThinklensError, match="zoo-train --model tiny-nonexistent"):
        v.organism("tiny-nonexistent")


#: tiny-overthink's full steer/planted run as measured (feature 402, 200 sampled prompts, 256 new tokens): per arm and
#: coefficient, (traces saying wait, correct, degenerate). Unsteered accuracy 0.725; every |c| >= 0.5 costs >= 0.51 of it.
FULL_RUN = {("feature", -1.0): (2, 0, 130), ("feature", -0.5): (146, 43, 5), ("feature", 0.0): (189, 145, 4),
            ("feature", 0.5): (167, 6, 11), ("feature", 1.0): (200, 0, 161),
            ("random_feature", -1.0): (25, 0, 13), ("random_feature", -0.5): (164, 91, 4), ("random_feature", 0.0): (189, 145, 4),
            ("random_feature", 0.5): (146, 39, 2), ("random_feature", 1.0): (43, 1, 1),
            ("top_activating", -1.0): (194, 0, 48), ("top_activating", 0.0): (189, 145, 4), ("top_activating", 1.0): (54, 0, 8),
            ("random_direction", -1.0): (196, 1, 19), ("random_direction", 0.0): (189, 145, 4),
            ("random_direction", 1.0): (35, 0, 39)}


def _summary(cells, warnings=()):
    """A steer run's summary computed from per-(arm, coefficient) counts (traces saying wait, correct, degenerate)."""
    from thinklens.calibration.findings import findings_doc
    from thinklens.steering.jobs.steer import SteerJobConfig, harm_bound, headlines, steer_findings, word_rates

    rows = [{"arm": a, "coeff": c, "seed": 0, "traces_with_word": k, "correct_traces": r, "degenerate_traces": d,
             "n_traces": 200} for (a, c), (k, r, d) in cells.items()]
    found = steer_findings(rows, "wait", 402)
    return {"feature": 402, "corr": 0.646, "findings": findings_doc(found), "rates": word_rates(rows, "wait"),
            "harm_bound": harm_bound(SteerJobConfig()), "headlines": headlines(found, "wait", 402), "warnings": list(warnings)}


def _planted_from(cells, monkeypatch, tmp_path, warnings=()):
    """The steer/planted check computed from recorded counts (the jobs replaced by their summary)."""
    summary = _summary(cells, warnings)
    monkeypatch.setattr(v, "organism", lambda name: None)
    monkeypatch.setattr(v, "_steer_sae", lambda ctx, model, sizes, site: {"sae": str(tmp_path / "sae" / "sae")})
    ctx = _ctx(tmp_path)
    monkeypatch.setattr(ctx, "run_job", lambda *a, **k: summary)
    return v.steer_planted_on(ctx, "tiny-overthink")


def _kept(cells):
    """``cells`` with the steered feature's accuracy and degenerate share kept at the unsteered run's, and a
    difference-of-means arm that does what the random feature does."""
    kept = {k: (w, 145 if k[0] == "feature" else r, 4 if k[0] == "feature" else d) for k, (w, r, d) in cells.items()}
    return {**kept, **{("diff_of_means", c): cell for (a, c), cell in kept.items() if a == "random_feature"}}


def test_steer_planted_counts_the_accuracy_cost(monkeypatch, tmp_path):
    """The steer benchmark's full run swings the wait rate 0.01 -> 1.00 beyond the random feature, as it did when the
    benchmark ignored accuracy (then 'recovered'), but at the price of the organism's accuracy (0.725 -> 0 at both
    ends, 65-80% degenerate text): the job's findings are not effects, so the benchmark fails and says why. With the
    accuracy kept, the same swing is recovered."""
    check = _planted_from(FULL_RUN, monkeypatch, tmp_path)
    assert check.verdict == "failed" and check.value == pytest.approx(0.99) and check.details["monotone"]
    assert check.details["beyond_random_at"] == [] and "harm bound" in check.target
    assert all(not h["within"] for h in check.details["harm_at_ends"].values())
    assert any("beyond the harm bound" in why for why in check.details["why_failed"])
    assert _planted_from(_kept(FULL_RUN), monkeypatch, tmp_path).verdict == "recovered"


def test_steer_planted_needs_the_difference_of_means(monkeypatch, tmp_path):
    """The setting's verdict includes the difference-of-means control the docs say it beats. Mutants killed:
    the arm dropped from the run (a steer run whose difference of means was not built passes on the controls that
    remain), and a difference of means that does as well as the feature left out of the verdict."""
    clean = _kept(FULL_RUN)
    assert _planted_from(clean, monkeypatch, tmp_path).details["diff_of_means_run"]
    dropped = {k: cell for k, cell in clean.items() if k[0] != "diff_of_means"}
    check = _planted_from(dropped, monkeypatch, tmp_path, warnings=["difference-of-means baseline not run: 3 states"])
    assert check.verdict == "failed" and not check.details["diff_of_means_run"]
    assert check.details["why_failed"] == ["the difference-of-means arm was not run: difference-of-means baseline not run: "
                                           "3 states"]
    as_well = {**clean, ("diff_of_means", -1.0): (2, 120, 6), ("diff_of_means", 1.0): (200, 120, 6)}
    check = _planted_from(as_well, monkeypatch, tmp_path)
    assert check.verdict == "failed" and check.details["beyond_random_at"] == []
    assert "difference-of-means baseline (a competing method) does as well" in check.details["why_failed"][0]


def test_steer_planted_asks_for_every_arm_on_the_scale_grid(monkeypatch, tmp_path):
    """The setting runs the steer job with the difference of means, in units of the feature's own activation, on the
    job's default grid (quick: its ends and the ablation). Mutants killed: ``diff_of_means=False`` (the control the docs
    cite, once never run), the grid reverted to multiples of the mean residual norm (mode add,
    -1..1: every arm broken before the feature steers)."""
    from thinklens.steering.jobs.steer import GRIDS, SteerJobConfig

    calls = []
    summary = _summary(_kept(FULL_RUN))
    monkeypatch.setattr(v, "organism", lambda name: None)
    monkeypatch.setattr(v, "_steer_sae", lambda ctx, model, sizes, site: {"sae": str(tmp_path / "sae" / "sae")})
    for quick in (True, False):
        ctx = SettingContext(quick=quick, seed=0, workdir=tmp_path, threads=1, progress=False)
        monkeypatch.setattr(ctx, "run_job", lambda name, sub, **kw: calls.append(kw) or summary)
        v.steer_planted_on(ctx, "tiny-overthink")
    quick, full = calls
    assert quick["diff_of_means"] is True and full["diff_of_means"] is True
    assert quick["mode"] == full["mode"] == "scale" == SteerJobConfig().mode
    assert full["coeffs"] == GRIDS["scale"] == SteerJobConfig().grid and set(quick["coeffs"]) <= set(full["coeffs"])
    assert -1.0 in quick["coeffs"] and 0.0 in quick["coeffs"]


#: tiny-overthink's wait feature at resid_post.1 steered in add mode (c times the mean residual norm, 10.6; the sweep
#: behind the scale default: the full setting's SAE and sizes, 200 sampled prompts, 256 new tokens): per arm and
#: coefficient, (traces saying wait, correct, degenerate). No arm moves the wait rate (189/200 unsteered); accuracy
#: falls for every arm from -0.2.
ADD_SWEEP = {
    "feature": {-0.3: (191, 87, 4), -0.2: (191, 114, 3), -0.1: (189, 135, 4), -0.05: (189, 142, 4), 0.0: (189, 145, 4),
                0.05: (189, 145, 3), 0.1: (189, 145, 3), 0.2: (187, 136, 1)},
    "random_feature": {-0.3: (188, 56, 1), -0.2: (190, 101, 1), -0.1: (190, 127, 2), -0.05: (189, 135, 3),
                       0.0: (189, 145, 4), 0.05: (190, 143, 4), 0.1: (190, 138, 4), 0.2: (190, 131, 3)},
    "top_activating": {-0.3: (174, 52, 1), -0.2: (188, 97, 3), -0.1: (190, 128, 3), -0.05: (189, 139, 3),
                       0.0: (189, 145, 4), 0.05: (189, 145, 4), 0.1: (190, 144, 4), 0.2: (187, 130, 2)},
    "random_direction": {-0.3: (183, 109, 2), -0.2: (188, 123, 2), -0.1: (190, 132, 4), -0.05: (189, 138, 4),
                         0.0: (189, 145, 4), 0.05: (189, 146, 3), 0.1: (189, 146, 3), 0.2: (189, 138, 3)},
    "diff_of_means": {-0.3: (179, 105, 5), -0.2: (188, 129, 4), -0.1: (189, 140, 4), -0.05: (189, 141, 4),
                      0.0: (189, 145, 4), 0.05: (190, 143, 2), 0.1: (189, 140, 2), 0.2: (189, 134, 1)}}


def test_the_add_grid_breaks_no_arm():
    """The add mode's default grid lies where no arm leaves the harm bound in the measured sweep, and where the old
    grid's smallest step (0.5) broke every arm. Mutant killed: the residual-norm grid -1..1 restored as add's default
    (a grid that breaks every arm before the feature steers)."""
    from thinklens.steering.jobs.steer import GRIDS, MAX_ACCURACY_DROP

    grid = [c for c in GRIDS["add"] if c != 0]
    assert grid and all(c in ADD_SWEEP["feature"] for c in grid), "a coefficient outside the measured sweep"
    for arm, by_c in ADD_SWEEP.items():
        for c in grid:
            assert (by_c[0.0][1] - by_c[c][1]) / 200 <= MAX_ACCURACY_DROP, (arm, c)
    # the old grid: at |c| >= 0.5 the accuracy of every arm it ran fell beyond the bound
    assert all((145 - r) / 200 > MAX_ACCURACY_DROP for (a, c), (_, r, _) in FULL_RUN.items() if abs(c) >= 0.5)
