"""``steer --word`` takes any word the model writes: a word the SAE run's saved statistics did not
score is scored on the fly on the model's own traces; a word the model never writes is refused as before."""

from __future__ import annotations

import json
import shutil

import pytest

from thinklens.errors import ThinklensError
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job


def _sae_run(tmp_path, sae_dir, corr: dict[str, list[float]], counts: dict[str, int]):
    """An `sae` run folder around the trained SAE whose saved statistics scored only ``corr``'s words."""
    folder = tmp_path / "sae-run"
    shutil.copytree(sae_dir, folder / "sae")
    d = json.loads((folder / "sae" / "cfg.json").read_text())["d_sae"]
    stats = {"site": "resid_post.0", "n_traces": 4, "n_tokens": 100, "freq": [0.5] * d, "mean_act": [0.1 + i / 1000 for i in range(d)],
             "max_act": [1.0] * d, "corr_words": {w: c[:d] for w, c in corr.items()}, "word_counts": counts,
             "corr_correct": None, "accuracy": None}
    (folder / "results").mkdir()
    (folder / "results" / "feature_stats.json").write_text(json.dumps(stats))
    return folder


def _steer(model, sae, prompts, word, runs, run_id):
    run_job("steer", model=model, sae=str(sae), prompts=str(prompts), n_prompts=4, stats_traces=6, coeffs=(0.0, 1.0),
            word=word, runs=runs, run_id=run_id, progress=False)
    return RunFolder.open(runs / "steer" / run_id).read_result("steer")["chosen"]


@pytest.fixture
def setting(tiny_llama, trained_sae, tmp_path):
    _, _, sae_dir = trained_sae
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(f"w{i} w{i + 1} w{i + 2}" for i in range(6)))
    word = tiny_llama.generate(["w1 w2 w3"], max_new_tokens=3)[0].tokens[0].strip()  # a word the model writes
    return sae_dir, prompts, word


def test_a_word_the_sae_run_did_not_score_is_scored_on_the_fly(tiny_llama, setting, tmp_path):
    sae_dir, prompts, word = setting
    sae = _sae_run(tmp_path, sae_dir, {"wait": [0.3] * 512}, {"wait": 9})
    got = _steer(tiny_llama, sae, prompts, word, tmp_path / "runs", "fly")
    # oracle: the bare SAE folder has no saved statistics, so the job scores every word on the same seeded traces
    want = _steer(tiny_llama, sae_dir, prompts, word, tmp_path / "runs", "bare")
    assert got["word_stats"] == want["word_stats"] == "scored on the fly"
    assert (got["feature"], got["corr"]) == (want["feature"], want["corr"]) and got["corr"] > 0


def test_a_word_the_sae_run_scored_uses_its_statistics(tiny_llama, setting, tmp_path):
    sae_dir, prompts, word = setting
    planted = [0.0] * 512
    planted[5] = 0.9  # the saved statistics say feature 5 predicts the word
    sae = _sae_run(tmp_path, sae_dir, {word.upper(): planted}, {word.upper(): 7})
    chosen = _steer(tiny_llama, sae, prompts, word, tmp_path / "runs", "saved")
    assert chosen["word_stats"] == "sae run" and chosen["feature"] == 5 and chosen["corr"] == pytest.approx(0.9)


def test_a_word_the_model_never_writes_keeps_its_refusal(tiny_llama, setting, tmp_path):
    sae_dir, prompts, _ = setting
    sae = _sae_run(tmp_path, sae_dir, {"wait": [0.3] * 512}, {"wait": 9})
    with pytest.raises(ThinklensError, match=r"bad word: received 'zebra'; expected a word the model writes: it starts none"):
        _steer(tiny_llama, sae, prompts, "zebra", tmp_path / "runs", "never")
