"""Build, save and load the zoo's tiny Llama models (HF ``LlamaForCausalLM``, safetensors).

Llama rather than Qwen2: transformers 5 forces its own BPE ``Qwen2Tokenizer`` on any ``qwen2`` folder
(ignoring tokenizer_config.json), which would break the word-level tokenizer; ``llama`` folders load
the saved ``tokenizer.json`` as is.

Weights are stored in float16 to keep the zoo small in git, while ``config.json`` says float32, so
``AutoModelForCausalLM.from_pretrained(folder)`` (dtype "auto" reads the config) gives float32.

Example:
    >>> cfg = ZooModelConfig(d_model=32, n_layers=1, n_heads=2, d_ffn=64)
    >>> model = build_model(cfg, vocab_size=169, seed=0)
    >>> sum(p.numel() for p in model.parameters()) < 20_000
    True
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from thinklens.errors import ThinklensError
from thinklens.zoo.registry import check_zoo_name, is_zoo_name, zoo_path
from thinklens.zoo.tokenizer import save_zoo_tokenizer


@dataclass(frozen=True)
class ZooModelConfig:
    """Shape of a zoo model (a Llama decoder with tied embeddings; tiny-r1 uses it for its Qwen2 decoder)."""

    d_model: int = 128
    """Residual stream width."""
    n_layers: int = 4
    """Number of transformer blocks."""
    n_heads: int = 4
    """Attention heads per block (d_model must be divisible by it)."""
    d_ffn: int = 512
    """Hidden width of the gated MLP."""
    max_positions: int = 256
    """Longest sequence (RoPE; the longest think trace is about 180 tokens)."""
    rope_theta: float = 10_000.0
    """RoPE base."""
    n_kv_heads: int | None = None
    """Key/value heads (grouped-query attention when fewer than n_heads, as Qwen2); None: n_heads."""

    def __post_init__(self) -> None:
        for name in ("d_model", "n_layers", "n_heads", "d_ffn", "max_positions"):
            if getattr(self, name) < 1:
                raise ThinklensError.of(f"ZooModelConfig.{name}", getattr(self, name), "a positive int", "pass 128")
        if self.d_model % self.n_heads:
            raise ThinklensError.of(
                "ZooModelConfig.n_heads", self.n_heads, f"a divisor of d_model={self.d_model}", "pass n_heads=4"
            )
        if self.n_kv_heads is not None and (self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads):
            raise ThinklensError.of("ZooModelConfig.n_kv_heads", self.n_kv_heads, f"None or a divisor of n_heads={self.n_heads}",
                                    "pass n_kv_heads=2")

    @property
    def kv_heads(self) -> int:
        """Key/value heads of the built model."""
        return self.n_kv_heads or self.n_heads

    def hf_config(self, vocab_size: int, *, pad_id: int = 0, bos_id: int = 1, eos_id: int = 2):
        """The ``transformers.LlamaConfig`` for this shape."""
        return LlamaConfig(
            vocab_size=vocab_size,
            hidden_size=self.d_model,
            intermediate_size=self.d_ffn,
            num_hidden_layers=self.n_layers,
            num_attention_heads=self.n_heads,
            num_key_value_heads=self.kv_heads,
            max_position_embeddings=self.max_positions,
            rope_theta=self.rope_theta,
            tie_word_embeddings=True,
            attention_dropout=0.0,
            pad_token_id=pad_id,
            bos_token_id=bos_id,
            eos_token_id=eos_id,
            attention_bias=False,
            mlp_bias=False,
            dtype="float32",
        )


def build_model(cfg: ZooModelConfig, vocab_size: int, *, seed: int):
    """A freshly initialised ``LlamaForCausalLM``; the init draws only from a local ``torch.Generator``."""
    return seeded_init(LlamaForCausalLM(cfg.hf_config(vocab_size)), cfg.n_layers, seed)


def seeded_init(model: "torch.nn.Module", n_layers: int, seed: int, std: float = 0.02) -> "torch.nn.Module":
    """Re-initialise every tensor of a Llama-layout model from a local generator (HF's own init uses the global
    RNG): norms 1, biases 0, matrices N(0, std), scaled by (2 n_layers)^-1/2 where a layer writes into the residual
    stream (GPT-2's init keeps its norm flat)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "norm" in name:
                p.fill_(1.0)
            elif p.ndim == 1:
                p.zero_()
            else:
                scale = (2 * n_layers) ** -0.5 if name.endswith(("o_proj.weight", "down_proj.weight")) else 1.0
                p.copy_(torch.randn(p.shape, generator=gen) * std * scale)
    return model


def n_params(model) -> int:
    """Number of distinct parameters (tied embeddings counted once)."""
    return sum(p.numel() for p in model.parameters())


def save_zoo_folder(model, folder: Path, *, meta: dict, half: bool = True) -> Path:
    """Write a complete zoo folder: config.json, model.safetensors (fp16), tokenizer files, zoo.json."""
    folder.mkdir(parents=True, exist_ok=True)
    model.config.dtype = "float32"
    model.save_pretrained(str(folder))
    if half:
        # Rewrite the weights as fp16 (tied lm_head is not stored); the config keeps float32.
        state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()
                 if not (k == "lm_head.weight" and model.config.tie_word_embeddings)}
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    save_zoo_tokenizer(folder)
    (folder / "zoo.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return folder


def load_zoo_model(path_or_name: str | Path, *, device: str = "cpu", dtype: torch.dtype = torch.float32):
    """``(model, tokenizer)`` for a zoo name or a folder, offline, in eval mode.

    Example:
        >>> model, tok = load_zoo_model("tiny-cot")  # doctest: +SKIP
    """
    if isinstance(path_or_name, str) and is_zoo_name(path_or_name):
        folder = zoo_path(path_or_name)
        if folder is None:
            raise ThinklensError.of(
                "zoo model", path_or_name, "a trained model under data/zoo",
                f"train it: `thinklens run zoo-train --model {path_or_name}`",
            )
    else:
        folder = Path(path_or_name)
        if not (folder / "config.json").is_file():
            if isinstance(path_or_name, str) and "/" not in path_or_name:
                check_zoo_name(path_or_name)  # raises did-you-mean for a mistyped zoo name
            raise ThinklensError.of("model folder", str(folder), "a folder with config.json", "check the path")
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, local_files_only=True).to(device)
    model.eval()
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    return model, tok


def model_meta(cfg: ZooModelConfig) -> dict:
    """The model shape as a JSON-able dict (goes into zoo.json)."""
    return asdict(cfg)
