"""The logit lens and the tuned lens (analyses/lens/), against oracles, and their planted and null settings.

Oracles: the logit lens of every block against the final norm and LM head applied by hand to Hugging Face's own
``output_hidden_states``, and at the last block against the model's own logits (raw HF forward); an identity-initialised
tuned lens against the logit lens (exactly equal); a saved and loaded lens against the one saved (exactly equal, loaded
by folder, by run and by model name); the KL against ``torch.nn.functional.kl_div``; the planted map against ``M h``
with the model's output unchanged; the answer's rank and probability against a softmax computed by hand.

Mutants killed (each named in the test that kills it):
- the logit lens without the final norm, or reading another block's state (the HF oracles);
- a translator that is not initialised to the identity (``A = I`` instead of 0, a random init; the identity test);
- save/load that drops the bias or transposes ``A`` (the round-trip test);
- translators left at their initialisation (no optimizer step), trained on shuffled targets, or read with one block's
  translator for every block (the planted setting fails each);
- a null whose shuffle flag is ignored, so that it trains on the true targets (the null setting fails it);
- the first top-1 taken by block before step (the order test).

A translator trained as one shared map for every block is *not* killed by the planted setting on tiny-r1: its states at
different blocks lie in separable subspaces, so one affine map recovers the planted block too (a recovered share of
about 0.92 against 0.96 for per-block translators, quick size, measured while writing the setting).
"""

from __future__ import annotations

import json

import pytest
import torch

from thinklens.analyses.lens import lens_training, validation
from thinklens.analyses.lens.along_trace import answer_target, first_top, read_along, trace_states
from thinklens.analyses.lens.figures import figure_answer_lens, figure_kl_by_layer
from thinklens.analyses.lens.lens_training import FinalDistribution, collect_states, kl_by_layer, train_translators
from thinklens.analyses.lens.translators import TunedLens, lens_logits, load_lens
from thinklens.calibration.controls import SettingContext
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError
from thinklens.generation.trace import Trace


def _zoo_has(name: str) -> bool:
    from thinklens.zoo.registry import zoo_path

    try:
        return zoo_path(name) is not None
    except Exception:
        return False


needs_r1 = pytest.mark.skipif(not _zoo_has("tiny-r1"), reason="tiny-r1 is not trained")


@pytest.fixture(scope="module")
def model(tiny_r1):
    from thinklens import HookedModel

    torch.set_num_threads(1)
    return HookedModel.load(tiny_r1)


@pytest.fixture(scope="module")
def rows(model):
    """Four short texts of the model's own (greedy completions of synthetic problems)."""
    from thinklens.data.formats import format_for
    from thinklens.data.problemsets import ProblemSet

    prompts = format_for(model, "auto").render_problems(ProblemSet.synthetic(4, seed=3, min_steps=1, max_steps=2), model.tokenizer)
    return lens_training.own_texts(model, prompts, max_new_tokens=16, seed=0, temperature=0.0)


# ---------------------------------------------------------------------------------------------- the logit lens


@torch.no_grad()
def test_logit_lens_is_the_final_norm_and_head_on_hfs_own_states_and_the_models_logits_at_the_last_block(model, rows):
    """Kills: the logit lens without the final norm; a lens reading another block's state (off by one)."""
    ids, _ = rows
    row = torch.tensor(ids[0])[None]  # [1, pos]
    out = model.hf(input_ids=row, output_hidden_states=True)  # raw HF forward
    batch = model.capture(row, [Site("resid_post", li) for li in range(model.n_layers)])
    head, norm = model.hf.get_output_embeddings(), model.hf.model.norm
    for li in range(model.n_layers - 1):  # hidden_states[li + 1] is block li's output (the last one is post-norm)
        mine = lens_logits(model, batch[f"resid_post.{li}"], li)
        torch.testing.assert_close(mine, head(norm(out.hidden_states[li + 1])), rtol=1e-5, atol=1e-5)
    last = lens_logits(model, batch[f"resid_post.{model.n_layers - 1}"], model.n_layers - 1)
    torch.testing.assert_close(last, out.logits, rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_an_identity_initialised_tuned_lens_is_the_logit_lens(model, rows):
    """Kills: translators initialised to ``A = I`` (the lens would read ``2h``) or at random."""
    ids, starts = rows
    texts = collect_states(model, ids, starts)
    lens = TunedLens(model.d_model, model.n_layers, model=model.name)
    for li in range(model.n_layers):
        h = texts.states[:, li]  # [tok, d]
        assert torch.equal(lens_logits(model, h, li, lens), lens_logits(model, h, li))
    kl = kl_by_layer(model, texts, {"logit": None, "tuned": lens})
    assert torch.equal(kl["logit"], kl["tuned"]) and float(kl["logit"][:, -1].max()) < 1e-5  # the last block: the output


def test_the_kl_is_torchs_kl_div():
    g = torch.Generator().manual_seed(0)
    target_logits, lens_out = torch.randn(5, 11, generator=g), torch.randn(5, 11, generator=g) * 3
    logp = torch.log_softmax(target_logits, -1)
    target = FinalDistribution(logp.exp(), (logp.exp() * logp).sum(-1))
    expected = torch.nn.functional.kl_div(torch.log_softmax(lens_out, -1), logp, log_target=True, reduction="none").sum(-1)
    torch.testing.assert_close(target.kl(lens_out), expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- the tuned lens


def test_a_tuned_lens_saved_and_loaded_gives_identical_outputs_by_folder_run_and_name(model, rows, tmp_path, monkeypatch):
    """Kills: a save that drops the bias, or a load that transposes ``A`` (the trained lens is not symmetric)."""
    ids, starts = rows
    texts = collect_states(model, ids, starts)
    lens, record = train_translators(model, texts, epochs=2, batch_tokens=8, lr=1e-2, seed=0)
    assert record.steps == len(record.loss) and record.loss[-1] < record.loss[0]
    assert float(lens.bias.detach().abs().sum()) > 0 and not torch.allclose(lens.weight[0].detach(), lens.weight[0].detach().T)
    run = tmp_path / "runs" / "tuned-lens" / "r1"
    lens.save(run / "lens", trained_on="test")
    (run / "config.json").write_text(json.dumps({"model": model.name}))
    (run / "meta.json").write_text(json.dumps({"status": "done", "created": "2026-01-01T00:00:00"}))
    h = texts.states[:, 0]
    for loaded in (TunedLens.load(run / "lens"), load_lens(run), load_lens(model.name, root=tmp_path / "runs")):
        assert loaded.record["trained_on"] == "test"
        for li in range(model.n_layers):
            assert torch.equal(lens_logits(model, texts.states[:, li], li, loaded), lens_logits(model, texts.states[:, li], li, lens))
    assert torch.equal(lens.translate(h, 0), TunedLens.load(run / "lens").translate(h, 0))
    with pytest.raises(ThinklensError, match="tuned lens"):
        load_lens("no-such-model", root=tmp_path / "runs")


def test_a_lens_refuses_a_model_of_another_shape(model):
    lens = TunedLens(model.d_model + 1, model.n_layers, model="other")
    with pytest.raises(ThinklensError, match="model for this tuned lens"):
        read_along(model, {0: torch.zeros(2, model.d_model)}, 3, lens=lens)


# ---------------------------------------------------------------------------------------------- along a trace


def test_first_top_is_the_earliest_step_then_the_lowest_block():
    """Kills: the first top-1 taken by block before step (block 0 at step 2 would win over block 3 at step 0)."""
    rank = [[5, 5, 5, 0], [2, 1, 0, 0], [0, 0, 0, 0]]
    assert first_top(rank) == (0, 3) and first_top(rank, [4, 5, 6, 7]) == (0, 7)
    assert first_top([[1, 1]]) is None


@torch.no_grad()
def test_read_along_gives_the_targets_rank_and_probability_by_hand(model):
    g = torch.Generator().manual_seed(1)
    states = {li: torch.randn(3, model.d_model, generator=g) for li in (0, 2)}
    target = 7
    res = read_along(model, states, target, tokens=["a", "b", "c"])
    for j, li in enumerate((0, 2)):
        probs = torch.softmax(model.hf.get_output_embeddings()(model.hf.model.norm(states[li])), -1)  # [step, vocab]
        for t in range(3):
            assert res.prob[t][j] == pytest.approx(float(probs[t, target]), rel=1e-5)
            assert res.rank[t][j] == int((probs[t] > probs[t, target]).sum())
    assert res.layers == [0, 2] and res.tokens == ["a", "b", "c"] and res.lens == "logit"
    assert res.first == first_top(res.rank, res.layers)
    assert len(figure_answer_lens(res, res).data) == 2 + 2 * (res.first is not None)


def test_answer_target_is_the_first_token_of_the_last_stated_answer():
    tr = Trace(prompt="Q", prompt_ids=[1], token_ids=[10, 11, 12, 13, 14, 15], tokens=["so ", "4", "2", " \\boxed{", "4", "2}"],
               text="so 42 \\boxed{42}", stop_reason="eos")
    assert answer_target(tr) == (14, 4)
    tr.text = "no answer here"
    assert answer_target(tr) is None


@needs_r1
@torch.no_grad()
def test_a_traces_states_read_along_every_block(model):
    (tr,) = model.generate(["<|im_start|>user\nAda has 3 pens. Ada buys 4 more. How many pens does Ada have?"
                            "<|im_end|>\n<|im_start|>assistant\n<think>\n"], max_new_tokens=60, capture=["resid_post.*"])
    states = trace_states(tr, model.n_layers)
    assert sorted(states) == list(range(model.n_layers))
    step = len(tr.token_ids) - 1
    res = read_along(model, states, tr.token_ids[step], tokens=tr.tokens, steps=step + 1)
    assert res.rank[step][-1] == 0  # greedy: the last block's top token is the token written
    with pytest.raises(ThinklensError, match="trace states"):
        trace_states(Trace("p", [1], [2], ["x"], "x", "eos"), model.n_layers)


def test_kl_figure_has_both_lenses():
    rows = [{"layer": 0, "logit_kl": 3.0, "logit_ci": [2.5, 3.5], "tuned_kl": 1.0, "tuned_ci": [0.8, 1.2]}]
    assert [t.name for t in figure_kl_by_layer(rows).data] == ["logit lens", "tuned lens"]


# ---------------------------------------------------------------------------------------------- planted and null


@needs_r1
@torch.no_grad()
def test_the_planted_map_changes_the_state_read_and_nothing_the_model_computes(model, rows):
    ids, _ = rows
    m, inv = validation.invertible_map(model.d_model, seed=0)
    plant = validation.planted_map(1, m, inv)
    site = Site("resid_post", 1)
    clean, planted = model.capture(ids[:2], [site]), model.capture(ids[:2], [site], interventions=plant)
    torch.testing.assert_close(planted[site], clean[site] @ m.T, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.forward_with(ids[:2], plant), model.forward_with(ids[:2]), rtol=1e-4, atol=1e-4)


def _ctx(tmp_path) -> SettingContext:
    return SettingContext(quick=True, seed=0, workdir=tmp_path, threads=1, progress=False)


def _setting(name: str):
    return next(s for s in validation.SETTINGS if s.name == name)


@needs_r1
def test_quick_planted_setting_recovers_the_map(tmp_path):
    check = _setting("planted").run(_ctx(tmp_path))
    assert check.verdict == "recovered", check
    d = check.details
    assert d["blowup"] >= validation.MIN_BLOWUP and d["output_change"] < 1e-3 and check.ci[0] >= validation.RECOVERED
    assert d["tuned_kl_clean"] < min(d["logit_kl_clean"], d["marginal_kl"])


def _shuffling(monkeypatch, always: bool) -> None:
    """train_translators with its shuffle flag forced on (``always``) or ignored (off)."""
    real = lens_training.train_translators

    def forced(*args, **kwargs):
        return real(*args, **{**kwargs, "shuffle_targets": always})

    monkeypatch.setattr(lens_training, "train_translators", forced)


@needs_r1
def test_quick_planted_setting_fails_translators_trained_on_shuffled_targets(tmp_path, monkeypatch):
    """Kills: translators fit to shuffled targets (they smooth the logit lens but cannot undo the map)."""
    _shuffling(monkeypatch, always=True)
    check = _setting("planted").run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.ci[1] < validation.RECOVERED, check


@needs_r1
def test_quick_planted_setting_fails_translators_left_at_the_identity(tmp_path, monkeypatch):
    """Kills: a trainer whose optimizer never steps (the tuned lens stays the logit lens)."""
    monkeypatch.setattr(torch.optim.AdamW, "step", lambda self, closure=None: None)
    check = _setting("planted").run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.value < 0.1, check


@needs_r1
def test_quick_planted_setting_fails_a_lens_read_with_one_blocks_translator(tmp_path, monkeypatch):
    """Kills: translators trained per block but read with block 0's for every block (the layer ignored when reading)."""
    real = TunedLens.translate

    def ignoring(self, h, layer):
        return real(self, h, 0 if not self.training and layer != self.n_layers - 1 else layer)

    monkeypatch.setattr(TunedLens, "translate", ignoring)
    check = _setting("planted").run(_ctx(tmp_path))
    assert check.verdict == "failed" and check.ci[1] < validation.RECOVERED, check


@needs_r1
def test_quick_null_setting_says_no_effect_and_fails_when_the_shuffle_is_ignored(tmp_path, monkeypatch):
    """Kills: a null whose shuffle flag is ignored (it trains on the true targets and beats the logit lens everywhere)."""
    check = _setting("null").run(_ctx(tmp_path))
    assert check.verdict == "no-effect" and check.details["shown_worse"], check
    _shuffling(monkeypatch, always=False)
    broken = _setting("null").run(_ctx(tmp_path))
    assert broken.verdict == "failed" and broken.ci[0] > 0, broken


# ---------------------------------------------------------------------------------------------- the job


@needs_r1
def test_the_job_writes_its_lens_findings_and_figures_and_loads_by_model_name(tmp_path):
    from thinklens.runs.jobs import run_job

    runs = tmp_path / "runs"
    result = run_job("tuned-lens", model="tiny-r1", n_train=8, n_eval=10, max_new_tokens=24, epochs=2, n_traces=2,
                     trace_tokens=60, runs=str(runs), run_id="t", progress=False, threads=1)
    folder = result.run_dir
    summary = result.summary
    assert [r["layer"] for r in summary["layers"]] == list(range(4)) and summary["n_eval"] == 10
    assert {f["statistic"] for f in result.findings} >= {"worst-block KL reduction (nats)", "mean KL over blocks (nats)"}
    assert result.findings[0]["verdict"] == "effect"  # tiny-r1's logit lens is far off at blocks 0-2
    assert (folder / "figures" / "kl_by_layer.json").is_file() and len(summary["traces"]) == 2
    lens = load_lens("tiny-r1", root=runs)
    assert lens.n_layers == 4 and lens.record["tokens"] == summary["train_tokens"]
    again = run_job("tuned-lens", model="tiny-r1", n_train=8, n_eval=10, max_new_tokens=24, epochs=2, n_traces=2,
                    trace_tokens=60, runs=str(runs), run_id="t", progress=False, threads=1)
    assert again.summary == summary  # resumed: every stage done, the same summary


def test_the_config_refuses_bad_sizes():
    from thinklens.analyses.jobs.tuned_lens import TunedLensConfig

    with pytest.raises(ThinklensError, match="n_train"):
        TunedLensConfig(n_eval=0)
