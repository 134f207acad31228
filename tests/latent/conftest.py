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
    from latent.data import latent_tokens

    return latent_tokens(model.tokenizer)


@pytest.fixture(scope="session")
def problems():
    from thinklens.tasks import generate_problems

    return generate_problems(16, seed=3, n_steps=3)


@pytest.fixture()
def examples(model, problems):
    from latent.data import example_from_problem

    return [example_from_problem(p, model.tokenizer) for p in problems]


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
