"""Fixtures of the steering tests: a tiny Llama on a word vocabulary and SAEs over it (all in-process)."""

from __future__ import annotations

import random
import signal
from types import SimpleNamespace

import pytest
import torch


def module_hooks(model: torch.nn.Module) -> dict[str, tuple[tuple, tuple]]:
    """The forward (pre-)hooks on each module, by id: what an intervention or a library may leave behind.
    transformers installs output-capturing hooks of its own once ``output_hidden_states`` is used; those
    stay, so tests compare with the hooks present before instead of expecting none."""
    return {n: (tuple(m._forward_hooks), tuple(m._forward_pre_hooks)) for n, m in model.named_modules()
            if m._forward_hooks or m._forward_pre_hooks}


@pytest.fixture(scope="session")
def hooks_of():
    """:func:`module_hooks`, for the tests."""
    return module_hooks


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory):
    from thinklens import HookedModel
    from thinklens.testing import build_tiny_model

    path = build_tiny_model("llama", tmp_path_factory.mktemp("steer-llama") / "m", d_model=32, n_layers=2)
    return HookedModel.load(str(path))


@pytest.fixture(scope="session")
def word_texts():
    rng = random.Random(0)
    return [" ".join(f"w{rng.randrange(40)}" for _ in range(rng.randrange(4, 16))) for _ in range(160)]


@pytest.fixture()
def random_sae():
    """An untrained sae-lens TopK SAE over the tiny model's 32-wide residual (seeded)."""
    from sae_lens import TopKSAE, TopKSAEConfig

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        sae = TopKSAE(TopKSAEConfig(d_in=32, d_sae=64, k=4))
        sae.b_enc.data.normal_(0, 0.1)
    sae.cfg.metadata.thinklens_site = "resid_post.0"
    return sae.eval()


@pytest.fixture(scope="session")
def sae_training(tiny_llama, word_texts, tmp_path_factory):
    """A tiny SAE trained by sae-lens (a few seconds), its folder, and the process state around training:
    the signal handlers installed before (not the defaults: under ``nohup ... &`` SIGINT is ignored) and
    after, and whether torch's global RNG state and the model's hooks were left as they were."""
    from steering.configs import SAETrainConfig
    from steering.sae import train_sae

    out = tmp_path_factory.mktemp("sae") / "resid_post.0"
    cfg = SAETrainConfig(site="resid_post.0", d_sae=64, k=4, training_tokens=12_000, train_batch_size_tokens=512,
                         store_batch_size_prompts=8, n_batches_in_buffer=4, n_eval_batches=2)
    handlers = (signal.SIGINT, signal.SIGTERM)
    before = {s: signal.getsignal(s) for s in handlers}
    rng, hooks = torch.get_rng_state(), module_hooks(tiny_llama.hf)
    sae, metrics = train_sae(tiny_llama, word_texts, cfg, out_dir=out)
    return SimpleNamespace(sae=sae, metrics=metrics, out=out, handlers_before=before,
                           handlers_after={s: signal.getsignal(s) for s in handlers},
                           rng_kept=torch.equal(rng, torch.get_rng_state()), hooks_kept=hooks == module_hooks(tiny_llama.hf))


@pytest.fixture(scope="session")
def trained_sae(sae_training):
    """``(sae, metrics, folder)`` of :func:`sae_training`."""
    return sae_training.sae, sae_training.metrics, sae_training.out


#: Helpers only the zoo's own formats use: a job prompting tiny-r1 in its chat format on a data set must not call them.
ZOO_ONLY = (
    "thinklens.tasks.render.render_prompt", "thinklens.tasks.render_prompt", "thinklens.tasks.render.render_target",
    "thinklens.tasks.render_target", "thinklens.tasks.render.render_example", "thinklens.tasks.render_example",
    "thinklens.tasks.spaced", "thinklens.tasks.problem.spaced", "thinklens.tasks.protocol.model_style",
    "thinklens.tasks.protocol.token_budget", "steering.data.zoo_problems", "steering.data.zoo_prompts",
    "steering.data.zoo_texts", "steering.problems.zoo_stream", "zoo.evaluate.evaluate_model",
)


@pytest.fixture(scope="session")
def tiny_r1(tmp_path_factory) -> str:
    """``tiny-r1`` when the zoo has it, else the folder of a small twin: Qwen2, tiny-r1's byte-level BPE tokenizer
    (digits split) and chat template (generation prompt opening ``<think>``), trained by tiny-r1's own trainer for
    150 steps (a few seconds) so it writes sentences ("Okay, so 8 = 8. Then ..."), without a zoo.json (a plain
    Hugging Face folder, as a user's model)."""
    from thinklens.zoo.registry import zoo_path

    if zoo_path("tiny-r1") is not None:
        return "tiny-r1"
    from thinklens.zoo.modeling import ZooModelConfig
    from zoo.r1 import build_r1_tokenizer
    from zoo.r1_train import train_r1_model
    from zoo.recipes import RECIPES
    from zoo.train import with_overrides

    recipe = with_overrides(RECIPES["tiny-r1"], vocab_size=400, steps=150, warmup_steps=10, batch_tokens=1024,
                            model=ZooModelConfig(d_model=32, n_layers=2, n_heads=2, d_ffn=64, max_positions=512))
    root = tmp_path_factory.mktemp("r1")
    folder = root / "tiny-r1-twin"
    train_r1_model("tiny-r1", recipe=recipe, out_dir=folder, ckpt_dir=root / "ckpt", progress=False, eval_per_steps=0,
                   tokenizer=build_r1_tokenizer(400, n_problems=200))
    (folder / "zoo.json").unlink()
    return str(folder)


def write_gsm8k(path, per_steps: int, *, seed: int):
    """Synthetic problems (2 and 3 steps, ``per_steps`` each, seed base ``seed``) as GSM8K lines: ``question``,
    and an ``answer`` text with ``<<a+b=c>>`` calculations ending in ``#### N``."""
    import json

    from thinklens.tasks.protocol import problems_by_steps

    lines = []
    for p in problems_by_steps(per_steps, 2, 3, seed=seed):
        steps = " ".join(f"{s.left} {s.op} {s.right} = <<{s.left}{s.op}{s.right}={s.result}>>{s.result}." for s in p.steps)
        lines.append(json.dumps({"question": p.question, "answer": f"{steps}\n#### {p.answer}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="session")
def gsm8k_writer():
    """:func:`write_gsm8k`, for tests that need a second file."""
    return write_gsm8k


@pytest.fixture
def gsm8k_file(tmp_path):
    """Eight held-out problems in GSM8K's test format (``question``, ``answer`` ending ``#### N``)."""
    from thinklens.tasks.protocol import HELD_OUT

    return write_gsm8k(tmp_path / "gsm8k_test.jsonl", 4, seed=HELD_OUT["eval"])


@pytest.fixture
def no_zoo_branch(monkeypatch):
    """Make every zoo-only helper raise, so a job that takes a zoo branch for a real-format model fails."""

    def forbidden(*args, **kwargs):
        raise AssertionError("a zoo-only branch was taken for a model prompted in its chat format")

    for target in ZOO_ONLY:
        monkeypatch.setattr(target, forbidden)
