"""Tiny random models of each supported family, saved with ``save_pretrained`` (for tests and benches).

Example:
    >>> import tempfile
    >>> path = build_tiny_model("llama", tempfile.mkdtemp())
    >>> sorted(p.name for p in path.iterdir())[:2]
    ['config.json', 'generation_config.json']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from thinklens.errors import ThinklensError

FAMILIES = ("llama", "qwen2", "gpt2", "gemma")


def word_tokenizer(n_words: int = 61):
    """A word-level fast tokenizer: ``<pad> <eos> <unk> w0 .. w{n-1}``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>"] + [f"w{i}" for i in range(n_words)])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def build_tiny_model(family: str, path: str | Path, *, d_model: int = 32, n_layers: int = 2, n_heads: int = 4,
                     d_mlp: int | None = None, vocab_size: int = 64, n_ctx: int = 128, seed: int = 0,
                     tokenizer: Any = None) -> Path:
    """Build a random ``family`` model from its config and ``save_pretrained`` it (with a tokenizer) to ``path``.

    ``tokenizer`` (a fast HF tokenizer, e.g. the zoo's) replaces the default word tokenizer; the vocabulary
    size and the pad / eos / bos ids then come from it, so the model reads the tokenizer's text.
    """
    import transformers as tf

    d_mlp = d_mlp or 2 * d_model
    if tokenizer is None:
        tokenizer = word_tokenizer(vocab_size - 3)
        common = dict(vocab_size=vocab_size, pad_token_id=0, eos_token_id=1, bos_token_id=None)
    else:
        common = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id)
    if family in ("llama", "qwen2"):
        cfg_cls, model_cls = (tf.LlamaConfig, tf.LlamaForCausalLM) if family == "llama" else (tf.Qwen2Config, tf.Qwen2ForCausalLM)
        cfg = cfg_cls(hidden_size=d_model, intermediate_size=d_mlp, num_hidden_layers=n_layers, num_attention_heads=n_heads,
                      num_key_value_heads=max(1, n_heads // 2), max_position_embeddings=n_ctx, **common)
    elif family == "gpt2":
        cfg_cls, model_cls = tf.GPT2Config, tf.GPT2LMHeadModel
        cfg = cfg_cls(n_embd=d_model, n_layer=n_layers, n_head=n_heads, n_inner=d_mlp, n_positions=n_ctx, **common)
    elif family == "gemma":
        cfg_cls, model_cls = tf.GemmaConfig, tf.GemmaForCausalLM
        cfg = cfg_cls(hidden_size=d_model, intermediate_size=d_mlp, num_hidden_layers=n_layers, num_attention_heads=n_heads,
                      num_key_value_heads=1, head_dim=d_model // n_heads, max_position_embeddings=n_ctx, **common)
    else:
        raise ThinklensError.of("family", family, f"one of {', '.join(FAMILIES)}", "pick a listed family")
    torch.manual_seed(seed)  # HF init draws from the global RNG; only test code calls this
    model = model_cls(cfg)
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
