"""Train and evaluate tiny-r1 (recipe :class:`thinklens.zoo.recipes.R1Recipe`): a Qwen2 model with its own BPE
tokenizer and chat template, trained from scratch on the synthetic task rendered as R1-style chats by the
zoo's one trainer (:func:`thinklens.zoo.trainer.train_zoo_model`, with :func:`r1_training`).

Seeded and resumable like the rest of the zoo: the init draws from ``torch.Generator(seed)``, batch
``k`` from ``numpy.random.default_rng([seed, k])``, the tokenizer is learned from a seeded corpus and
kept next to the checkpoint, and optimizer state goes through :mod:`thinklens.engine.training` checkpoints.
Evaluation prompts through the tokenizer's chat template and generates greedily with the core's
``HookedModel.generate``; the answer is graded by :func:`thinklens.data.answers.is_correct` (last ``\\boxed{}``).

Example:
    >>> from thinklens.zoo.trainer import train_zoo_model
    >>> meta = train_zoo_model("tiny-r1", seed=0, out_dir="/tmp/zoo/tiny-r1")  # doctest: +SKIP
    >>> evaluate_r1_model("tiny-r1", n_per_steps=20).accuracy[3] > 0.9  # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

from thinklens.data.answers import is_correct
from thinklens.engine.model import HookedModel
from thinklens.engine.training import warmup_cosine_lr
from thinklens.errors import ThinklensError
from thinklens.runs.folders import replace_dir
from thinklens.tasks import TaskConfig, apply_op
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps, zoo_meta
from thinklens.zoo.eval_result import ZooEvalResult
from thinklens.zoo.modeling import seeded_init
from thinklens.zoo.overthink import OverthinkMix
from thinklens.zoo.overthink_eval import WithOverthinking, measure_overthinking
from thinklens.zoo.r1 import IM_END, R1Encoder, build_r1_tokenizer, r1_token_budget, user_message
from thinklens.zoo.recipes import RECIPES, R1Recipe, get_recipe
from thinklens.zoo.registry import repo_relative, zoo_dir
from thinklens.zoo.training_setup import ZooTraining

__all__ = [
    "build_r1_model", "correction_count", "equation_right", "evaluate_r1_model", "load_r1_parent", "r1_lr", "r1_parent",
    "r1_token_budget", "r1_training", "save_r1_folder",
]


def build_r1_model(recipe: R1Recipe, tokenizer: Any, *, seed: int):
    """A freshly initialised ``Qwen2ForCausalLM`` sized for ``tokenizer`` (tied embeddings, GQA, qkv biases).

    Every tensor is drawn from a local ``torch.Generator`` (HF's own init uses the global RNG), with the
    zoo's scheme: normal(0, 0.02), residual writers scaled by ``(2 * n_layers) ** -0.5``, norms 1, biases 0.
    """
    shape = recipe.model
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=shape.d_model, intermediate_size=shape.d_ffn,
        num_hidden_layers=shape.n_layers, num_attention_heads=shape.n_heads, num_key_value_heads=shape.kv_heads,
        max_position_embeddings=shape.max_positions, rope_theta=shape.rope_theta, tie_word_embeddings=True,
        attention_dropout=0.0, use_sliding_window=False, bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids(IM_END), pad_token_id=tokenizer.pad_token_id, dtype="float32",
    )
    return seeded_init(Qwen2ForCausalLM(config), shape.n_layers, seed)  # the zoo's init, from a local generator


def save_r1_folder(model, tokenizer, folder: Path, *, meta: dict) -> Path:
    """config.json, generation_config.json, model.safetensors (fp16; the config keeps float32), the
    tokenizer with its chat template inside tokenizer_config.json, and zoo.json."""
    folder.mkdir(parents=True, exist_ok=True)
    model.config.dtype = "float32"
    model.generation_config.eos_token_id = model.config.eos_token_id
    model.generation_config.pad_token_id = model.config.pad_token_id
    model.save_pretrained(str(folder))
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(str(folder), save_jinja_files=False)
    (folder / "zoo.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return folder


def r1_lr(recipe: R1Recipe, step: int) -> float:
    """Learning rate at ``step``: warmup and cosine over ``steps``, then the continuation phase's own
    (50-step warmup to ``more_lr``, cosine over ``more_steps``).

    Example:
        >>> from thinklens.zoo.recipes import RECIPES
        >>> from thinklens.zoo.trainer import with_overrides
        >>> r = with_overrides(RECIPES["tiny-r1"], more_steps=100, more_lr=1e-3)
        >>> r1_lr(r, r.warmup_steps) == r.lr, r1_lr(r, r.steps + 50) == r.more_lr
        (True, True)
    """
    if step < recipe.steps:
        return warmup_cosine_lr(step, peak=recipe.lr, warmup_steps=recipe.warmup_steps,
                                decay_steps=recipe.steps - recipe.warmup_steps, floor_ratio=recipe.min_lr_ratio)
    warmup = min(50, recipe.more_steps)
    return warmup_cosine_lr(step - recipe.steps, peak=recipe.more_lr, warmup_steps=warmup,
                            decay_steps=recipe.more_steps - warmup, floor_ratio=recipe.min_lr_ratio)


def _identity(recipe: R1Recipe, seed: int) -> dict:
    """What a checkpoint must match to be resumed: the recipe without its continuation phase."""
    return {"recipe": {k: v for k, v in recipe.to_json().items() if k not in ("more_steps", "more_lr")}, "seed": seed}


def _tokenizer_for(recipe: R1Recipe, seed: int, ckpt: Path, given: Any = None):
    """The tokenizer of this run: the one kept next to the checkpoint if any, else ``given`` or one learned
    now (and kept)."""
    kept = ckpt.with_name(ckpt.name + "-tokenizer")
    if (kept / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(kept))
    tok = given if given is not None else build_r1_tokenizer(recipe.vocab_size, seed=seed, task=recipe.task)
    tmp = kept.with_name(kept.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tok.save_pretrained(str(tmp), save_jinja_files=False)
    replace_dir(tmp, kept)
    return tok


def r1_parent(recipe: R1Recipe, out: Path | None = None) -> Path:
    """The folder of an R1 recipe's ``init``: next to ``out`` if trained there (a private zoo), else the
    committed one under data/zoo."""
    for folder in ([out.parent / recipe.init] if out is not None else []) + [zoo_dir() / recipe.init]:
        if (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    raise ThinklensError.of(f"parent of {recipe.name}", recipe.init, "a trained R1 model folder",
                            f"train it first: thinklens run zoo-train --model {recipe.init}")


def load_r1_parent(folder: Path):
    """``(model, tokenizer)`` of a published R1 folder, the model in float32 and in training mode."""
    model = Qwen2ForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    return model.train(), AutoTokenizer.from_pretrained(str(folder))


def r1_training(recipe: R1Recipe, *, seed: int, ckpt: Path, label: str, tokenizer: Any = None,
                out: Path | None = None) -> ZooTraining:
    """tiny-r1's part of :func:`thinklens.zoo.trainer.train_zoo_model`: a fresh Qwen2 sized for this run's tokenizer
    (:func:`_tokenizer_for`), or the ``init`` model with its tokenizer (:func:`r1_parent`, looked up next to
    ``out`` first), both phases' schedule, chat-rendered batches, and its last checkpoint kept."""
    if recipe.init is not None:
        parent = r1_parent(recipe, out)
        model, parent_tok = load_r1_parent(parent)
        model.config.max_position_embeddings = recipe.model.max_positions  # RoPE: nothing learned per position
        tok = _tokenizer_for(recipe, seed, ckpt, parent_tok)
        init = {"init": recipe.init, "parent": recipe.init, "parent_dir": repo_relative(parent),
                "init_note": f"fine-tuned from {recipe.init}: its weights and its tokenizer"}
    else:
        tok = _tokenizer_for(recipe, seed, ckpt, tokenizer)
        model = build_r1_model(recipe, tok, seed=seed)
        init = {"init": None, "init_note": "fresh init: its BPE vocabulary differs from tiny-pre's word-level one, so "
                "it cannot share the zoo's tiny-pre initialisation (weight arithmetic with other zoo models is meaningless)"}
    encoder = R1Encoder(tok)
    meta_fields = {**init, "architecture": "qwen2", "prompt_format": recipe.prompt_format, "vocab_size": len(tok),
                   "recipe": recipe.to_json()}
    if recipe.init is not None:  # the zoo.json entry said of every lineage member (parent and training data)
        meta_fields["training_data"] = recipe.mix.describe()
    return ZooTraining(
        model=model, total_steps=recipe.total_steps, lr=lambda step: r1_lr(recipe, step),
        batch=lambda rng: encoder.batch(rng, recipe.task, recipe.mix, batch_tokens=recipe.batch_tokens),
        identity=_identity(recipe, seed), meta_fields=meta_fields,
        write_folder=lambda folder, meta: save_r1_folder(model, tok, folder, meta=meta),
        evaluate=lambda folder, n_per_steps, eval_seed: evaluate_r1_model(folder, n_per_steps=n_per_steps,
                                                                          seed=eval_seed, label=label, recipe=recipe),
        keep_last_checkpoint=True,
    )


# ---------------------------------------------------------------- evaluation

_STEP_RE = re.compile(r"(\d+) ([-+*/]) (\d+) = (\d+)")


def equation_right(text: str) -> list[bool]:
    """Whether each ``a op b = c`` written in a text is right.

    Example:
        >>> equation_right("First, 7 + 5 = 12. Then 12 * 3 = 35. Wait, 12 * 3 = 36.")
        [True, False, True]
    """
    out = []
    for a, op, b, c in _STEP_RE.findall(text):
        a, b, c = int(a), int(b), int(c)
        ok = op != "/" or (b and a % b == 0)
        out.append(bool(ok) and apply_op(op, a, b) == c)
    return out


def correction_count(text: str) -> tuple[int, int]:
    """``(corrections, right)``: ``Wait,`` directly followed by an equation, and how many of those are right.

    Example:
        >>> correction_count("Then 60 - 8 = 62. Wait, 60 - 8 = 52. Then 52 + 10 = 62.")
        (1, 1)
    """
    found = [equation_right(m.group(0)) for m in re.finditer(r"Wait, \d+ [-+*/] \d+ = \d+", text)]
    return len(found), sum(r[0] for r in found if r)


def evaluate_r1_model(path_or_model: Any, *, n_per_steps: int = 25, steps: range | list[int] = range(1, 9),
                      seed: int = HELD_OUT["eval"], task: TaskConfig | None = None, batch_size: int = 64,
                      n_samples: int = 2, label: str | None = None, recipe: R1Recipe | None = None):
    """Held-out accuracy of tiny-r1 (or a folder / HookedModel like it) by number of steps, greedy.

    ``recipe`` (default: the R1 recipe its zoo.json names, else tiny-r1's) gives the task and the token budget
    (:meth:`thinklens.zoo.r1.R1TextMix.token_budget`); an overthinking recipe's result also carries
    :func:`thinklens.zoo.overthink_eval.measure_overthinking` (``overthinking`` in its JSON).

    Prompts are the tokenizer's chat template applied to the user turn (question + R1 instruction) with
    the generation prompt; problems come from the shared held-out streams
    (:func:`thinklens.tasks.protocol.problems_by_steps`); answers are graded from the last ``\\boxed{}``.
    Returns a :class:`thinklens.zoo.eval_result.ZooEvalResult` with prompt format ``chat``.
    """
    if n_per_steps < 1:
        raise ThinklensError.of("n_per_steps", n_per_steps, "an int >= 1", "pass n_per_steps=25")
    model = path_or_model if isinstance(path_or_model, HookedModel) else HookedModel.load(str(path_or_model))
    label = label or (path_or_model.name if isinstance(path_or_model, HookedModel) else str(path_or_model))
    recipe = recipe or _recipe_of(path_or_model)
    task = task or recipe.task
    t0 = time.monotonic()
    acc: dict[int, float] = {}
    eq_acc: dict[int, float] = {}
    samples: dict[int, list[str]] = {}
    n_reflect = n_corr = n_corr_right = n_traces = 0
    for n_steps in steps:
        problems = problems_by_steps(n_per_steps, n_steps, n_steps, seed=seed, config=task)
        prompts = [model.tokenizer.apply_chat_template([{"role": "user", "content": user_message(p)}],
                                                       add_generation_prompt=True, tokenize=False) for p in problems]
        traces = model.generate(prompts, max_new_tokens=recipe.mix.token_budget(n_steps), batch_size=batch_size)
        texts = [t.text for t in traces]
        acc[n_steps] = sum(is_correct(t, p.answer) for t, p in zip(texts, problems)) / len(problems)
        eqs = [ok for t in texts for ok in equation_right(t)]
        eq_acc[n_steps] = sum(eqs) / len(eqs) if eqs else float("nan")
        samples[n_steps] = texts[:n_samples]
        for t in texts:
            n_traces += 1
            n_reflect += bool(re.search(r"\b(Wait|Hmm|So|Therefore)\b", t))
            c, r = correction_count(t)
            n_corr, n_corr_right = n_corr + c, n_corr_right + r
    result = ZooEvalResult(
        model=label, prompt_format="chat", seed=seed, n_per_steps=n_per_steps, accuracy=acc, equation_accuracy=eq_acc,
        reflection_rate=n_reflect / n_traces if n_traces else None,
        correction_right_rate=n_corr_right / n_corr if n_corr else None, n_corrections=n_corr,
        wall_s=round(time.monotonic() - t0, 1), samples=samples,
    )
    if isinstance(recipe.mix, OverthinkMix):
        return WithOverthinking(result, measure_overthinking(model, n_per_steps=n_per_steps, steps=steps, seed=seed,
                                                             task=task, mix=recipe.mix, batch_size=batch_size))
    return result


def _recipe_of(path_or_model: Any) -> R1Recipe:
    """The R1 recipe a model's zoo.json names (tiny-r1's when it names none or another kind)."""
    name = getattr(path_or_model, "name", path_or_model)
    found = RECIPES.get(zoo_meta(str(name)).get("name", ""))
    return found if isinstance(found, R1Recipe) else get_recipe("tiny-r1")
