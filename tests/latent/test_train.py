"""The trainer jobs: kill + resume ends like an uninterrupted run, LoRA, run folders, saved models, bad input."""

import json

import pytest
import torch

from thinklens.errors import ThinklensError
from thinklens.latent.config import CoconutConfig, CODIConfig, LatentSFTConfig
from thinklens.latent.examples import ExampleBuilder, ExampleSource
from thinklens.latent.latent_model import load_latent_model
from thinklens.latent.methods import method_of
from thinklens.latent.segments import add_latent_tokens, latent_tokens
from thinklens.latent.training_loop import train_latent
from thinklens.runs.folders import RunFolder
from thinklens.runs.jobs import run_job


def train(cfg, root, run_id="r", **fields):
    """``thinklens run <method> --runs root --run-id run_id`` from Python."""
    return run_job(method_of(cfg).name, config=cfg, runs=root, run_id=run_id, progress=False, **fields)


class Killed(Exception):
    pass


def _kill_at(step):
    def hook(g):
        if g == step:
            raise Killed
    return hook


@pytest.mark.parametrize("make", [
    lambda m: CODIConfig(model=m, train_steps=4, batch_size=4, ckpt_every=2, n_eval=1),
    lambda m: CoconutConfig(model=m, max_stage=1, stage_steps=2, final_stage_steps=2, batch_size=4, ckpt_every=5, n_eval=1),
], ids=["codi-mid-phase", "coconut-across-stages"])
def test_killed_and_resumed_run_ends_with_the_same_metrics(zoo_like_dir, tmp_path, make):
    cfg = make(str(zoo_like_dir))
    straight = train(cfg, tmp_path / "a")
    kind = method_of(cfg).name  # each trainer writes runs/<job>/<id>
    run = tmp_path / "b" / kind / "r"
    with pytest.raises(Killed):  # the folder the job opens for --runs b --run-id r
        train_latent(cfg, RunFolder.create(kind, cfg, path=run), on_step=_kill_at(3), progress=False)
    resumed = train(cfg, tmp_path / "b")  # the same command again resumes
    assert [h["loss"] for h in resumed["history"]] == [h["loss"] for h in straight["history"]]
    assert resumed["eval"] == straight["eval"]
    ckpt = run / "checkpoint"
    assert {p.name for p in ckpt.iterdir()} == {"model.safetensors", "optimizer.safetensors", "state.json"}
    assert json.loads((run / "meta.json").read_text())["status"] == "done"


def test_saved_model_reloads_and_infers_the_same(zoo_like_dir, tmp_path, examples):
    cfg = CODIConfig(model=str(zoo_like_dir), train_steps=2, batch_size=4, n_eval=0, n_latents=3)
    train(cfg, tmp_path, publish=str(tmp_path / "tiny-codi"))
    lm = load_latent_model(str(tmp_path / "tiny-codi"))
    assert lm.method == "codi" and (tmp_path / "tiny-codi" / "projection.safetensors").is_file()
    res = lm.infer(examples[:2])
    assert res[0]["latent_steps"] == 3 and len(res[0]["latents"][0]["tokens"]) == 5
    size = sum(p.stat().st_size for p in (tmp_path / "tiny-codi").iterdir())
    assert size < 5 * 2**20


def test_lora_trains_only_adapters_and_merges(zoo_like_dir, tmp_path, examples):
    cfg = CODIConfig(model=str(zoo_like_dir), train_steps=2, batch_size=4, n_eval=0, n_latents=2, lora_r=4, lr=1e-2)
    from thinklens.latent.training_loop import _trainable, prepare

    model, module, _ = prepare(cfg)
    names = [n for n, _ in _trainable(module, cfg)]
    assert names and all("lora_" in n or n.startswith("prj.") for n in names)
    before = module.student_outputs(examples[:2])
    from thinklens.latent.saved_model import merge_lora

    merge_lora(model.hf)
    assert not any("lora_" in n for n, _ in model.hf.named_parameters())
    assert torch.allclose(module.student_outputs(examples[:2]), before, atol=1e-5)  # B = 0 at init: merge is exact
    train(cfg, tmp_path, publish=str(tmp_path / "m"))
    assert not any("lora" in k for k in json.loads((tmp_path / "m" / "config.json").read_text()))


def test_missing_special_tokens_is_a_clear_error_and_can_be_added(tiny_dirs):
    from thinklens import HookedModel

    m = HookedModel.load(str(tiny_dirs["llama"]))  # a word tokenizer without <bot> ...
    with pytest.raises(ThinklensError, match="add_latent_tokens"):
        latent_tokens(m.tokenizer)
    n = m.hf.get_input_embeddings().weight.shape[0]
    m2 = add_latent_tokens(m)
    assert latent_tokens(m2.tokenizer).bot >= 0 and m2.hf.get_input_embeddings().weight.shape[0] >= n
    with pytest.raises(ThinklensError):
        latent_tokens(m.tokenizer)  # the caller's tokenizer is untouched


def test_dataset_without_cot_is_a_clear_error(tmp_path, model):
    from thinklens.data.formats import PromptFormat
    from thinklens.data.problemsets import load_problems

    f = tmp_path / "d.jsonl"
    f.write_text('{"question": "Tom has 3 apples. How many?", "answer": "#### 3"}\n')
    with pytest.raises(ThinklensError, match="no chain of thought"):
        ExampleSource(model.tokenizer, seed=0, min_steps=1, max_steps=1, problems=load_problems(str(f)))
    with pytest.raises(ThinklensError, match="no chain of thought"):  # the trainer refuses before loading the model
        train(CODIConfig(model="no/such-model", data=str(f), train_steps=1), tmp_path)
    g = tmp_path / "e.jsonl"
    g.write_text('{"question": "Tom has 3 apples . He buys 2 more .", "cot": "<<3+2=5>>", "answer": 5}\n')
    source = ExampleSource(model.tokenizer, seed=0, min_steps=1, max_steps=1, problems=load_problems(str(g)))
    (ex,) = source.batch(0, 1)
    assert ex.gold == "5" and len(ex.steps) == 1
    assert ex == ExampleBuilder(model.tokenizer, PromptFormat("cot")).build(load_problems(str(g))[0])


@pytest.mark.parametrize("bad", [dict(n_latents=0), dict(train_steps=0), dict(lr=-1.0), dict(min_steps=5, max_steps=2),
                                 dict(data="synthetic:2-4"), dict(data_fields="question=q"), dict(prompt_format="chta")])
def test_bad_configs(bad):
    with pytest.raises(ThinklensError, match="fix"):
        CODIConfig(**bad)


def test_latent_sft_phases_run(zoo_like_dir, tmp_path):
    cfg = LatentSFTConfig(model=str(zoo_like_dir), encoder_steps=1, decoder_steps=1, joint_steps=1, stage2_steps=1,
                          batch_size=2, n_eval=1, max_latent_steps=3)
    m = train(cfg, tmp_path)
    assert [h["phase"] for h in m["history"]] == ["encoder", "decoder", "joint", "stage2"]
    assert "kl" in m["history"][-1]


def test_continuing_a_codi_model_keeps_its_projection_and_special_tokens(zoo_like_dir, tmp_path, examples):
    first = CODIConfig(model=str(zoo_like_dir), train_steps=3, batch_size=4, n_eval=0, n_latents=2, lr=1e-2)
    train(first, tmp_path, publish=str(tmp_path / "m1"))
    m1 = load_latent_model(str(tmp_path / "m1"))
    # one more step at a vanishing learning rate: the continued model must be the start model
    more = CODIConfig(model=str(tmp_path / "m1"), train_steps=1, batch_size=4, n_eval=0, n_latents=2, lr=1e-12, warmup_frac=0.0)
    train(more, tmp_path, run_id="more", publish=str(tmp_path / "m2"))
    m2 = load_latent_model(str(tmp_path / "m2"))
    a, b = m1.module.student_outputs(examples[:3]), m2.module.student_outputs(examples[:3])
    assert torch.allclose(a, b, atol=1e-5)
    # the oracle can fail: starting the same model afresh re-initialises the projection and the <bot>/<eot> rows
    from thinklens.latent.training_loop import prepare

    _, fresh, _ = prepare(CODIConfig(model=str(zoo_like_dir), n_latents=2))
    assert not torch.allclose(fresh.prj[1].weight, m1.module.prj[1].weight)
    meta = json.loads((tmp_path / "m2" / "latent.json").read_text())
    assert meta["continued"]["steps"] == 3 and meta["total_steps"] == 4
    assert meta["total_train_wall_s"] >= meta["train_wall_s"]


def test_continuing_with_another_method_or_projection_is_a_clear_error(zoo_like_dir, tmp_path):
    train(CODIConfig(model=str(zoo_like_dir), train_steps=1, batch_size=2, n_eval=0, n_latents=2), tmp_path,
          publish=str(tmp_path / "m1"))
    with pytest.raises(ThinklensError, match="a codi model"):
        train(CoconutConfig(model=str(tmp_path / "m1"), max_stage=1, stage_steps=1, final_stage_steps=0), tmp_path, "c")
    with pytest.raises(ThinklensError, match="projection"):
        train(CODIConfig(model=str(tmp_path / "m1"), train_steps=1, projection=False), tmp_path, "p")
    assert not (tmp_path / "coconut" / "c" / "checkpoint").exists()  # refused before any training


def test_token_level_sft_needs_no_special_tokens_and_keeps_the_vocabulary(tiny_dirs, tmp_path):
    """SFT writes only the model's own tokens: a tokenizer without <bot> ... trains, and the fine-tune keeps its base's
    vocabulary, so hybrid and reasoning-vector can pair the two (a check of every method's tokens refuses it)."""
    from thinklens import HookedModel
    from thinklens.latent.config import SFTConfig

    base = tiny_dirs["llama"]
    n = HookedModel.load(str(base)).hf.get_input_embeddings().weight.shape[0]
    cfg = SFTConfig(model=str(base), train_steps=1, batch_size=2, n_eval=1, min_steps=2, max_steps=2)
    train(cfg, tmp_path, publish=str(tmp_path / "m"))
    tuned = load_latent_model(str(tmp_path / "m"))
    assert tuned.model.hf.get_input_embeddings().weight.shape[0] == n
    assert tuned.tokens.bot == -1 and tuned.tokens.latent == -1
    with pytest.raises(ThinklensError, match="add_latent_tokens"):
        latent_tokens(tuned.model.tokenizer, method_of(CODIConfig()).special_tokens)  # CODI still needs them
