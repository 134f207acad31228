"""A tiny random Llama with the zoo tokenizer (all special tokens in the vocabulary): fast and offline."""

import pytest
import torch
from beartype import BeartypeConf, beartype

# The root conftest installs jaxtyping's import hook with the checker named "conftest.typechecker";
# pytest imports this file under the same module name, so it must offer the same checker.
typechecker = beartype(conf=BeartypeConf(is_pep484_tower=True))


@pytest.fixture(scope="session")
def zoo_like_dir(tmp_path_factory):
    from thinklens.zoo.modeling import ZooModelConfig, build_model, save_zoo_folder
    from thinklens.zoo.tokenizer import zoo_vocab

    path = tmp_path_factory.mktemp("latent") / "tiny"
    model = build_model(ZooModelConfig(d_model=32, n_layers=2, n_heads=2, d_ffn=64, max_positions=256), len(zoo_vocab()), seed=0)
    save_zoo_folder(model, path, meta={"name": "tiny"}, half=False)
    return path


@pytest.fixture()
def model(zoo_like_dir):
    from thinklens import HookedModel

    return HookedModel.load(str(zoo_like_dir))


@pytest.fixture()
def tokens(model):
    from thinklens.latent.segments import latent_tokens

    return latent_tokens(model.tokenizer)


@pytest.fixture(scope="session")
def problems():
    from thinklens.tasks import generate_problems

    return generate_problems(16, seed=3, n_steps=3)


@pytest.fixture()
def examples(model, problems):
    from thinklens.latent.segments import example_from_problem

    return [example_from_problem(p, model.tokenizer) for p in problems]


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def r1_twin(tmp_path_factory):
    """tiny-r1's untrained twin, built by the zoo's own builders: Qwen2, byte-level BPE with one token per digit,
    the chat template opening <think>, and a context long enough for the self-reward's verifier prompts."""
    from thinklens.tasks import TaskConfig
    from thinklens.zoo.modeling import ZooModelConfig
    from thinklens.zoo.r1 import build_r1_tokenizer
    from thinklens.zoo.r1_train import build_r1_model, save_r1_folder
    from thinklens.zoo.recipes import RECIPES
    from thinklens.zoo.trainer import with_overrides

    tok = build_r1_tokenizer(300, task=TaskConfig(max_steps=2), n_problems=150)
    recipe = with_overrides(RECIPES["tiny-r1"], vocab_size=300,
                            model=ZooModelConfig(d_model=32, n_layers=2, n_heads=4, d_ffn=64, max_positions=4096,
                                                 n_kv_heads=2))
    path = tmp_path_factory.mktemp("r1") / "tiny-r1-twin"
    save_r1_folder(build_r1_model(recipe, tok, seed=0), tok, path,
                   meta={"name": "tiny-r1-twin", "init": None, "prompt_format": "chat"})
    return path


@pytest.fixture(scope="session")
def gsm8k_aug(tmp_path_factory):
    """A GSM8k-Aug style JSONL (question, cot of <<a*b=c>> steps, answer): synthetic problems in words, and one
    GSM8K problem with a number the BPE tokenizer splits into digits."""
    import json

    from thinklens.tasks import generate_problems

    rows = [{"question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in "
                         "May. How many clips did Natalia sell altogether in April and May?",
             "cot": "<<48/2=24>> <<48+24=72>>", "answer": "72"}]
    rows += [{"question": p.question, "cot": " ".join(s.equation for s in p.steps), "answer": str(p.answer)}
             for n in (2, 3) for p in generate_problems(4, seed=7 + n, n_steps=n)]
    path = tmp_path_factory.mktemp("data") / "gsm8k_aug.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
