"""Tiny random models of many architecture families, saved with ``save_pretrained`` (for tests and benches).

``FAMILIES`` are the four the shared test fixtures build; ``TINY_FAMILIES`` every HF ``model_type`` the
family tests and ``bench/families.py`` check (each with the config quirks a 2-layer model needs).

Example:
    >>> import tempfile
    >>> path = build_tiny_model("llama", tempfile.mkdtemp())
    >>> sorted(p.name for p in path.iterdir())[:2]
    ['config.json', 'generation_config.json']
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from thinklens.errors import ThinklensError

FAMILIES = ("llama", "qwen2", "gpt2", "gemma")
#: HF model types :func:`build_tiny_model` builds (``gemma`` is Gemma 1; the others are ``model_type`` values).
TINY_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi3", "gpt2",
                 "gpt_neox", "olmo2", "olmo3", "granite", "smollm3", "gpt_oss", "deepseek_v3", "phi", "opt")
#: A short sliding window, so that generation in the tests slides past it.
SLIDING_WINDOW = 8
#: Hybrid (attention beside SSM / linear-attention / convolution blocks) and recurrent HF model types
#: :func:`build_tiny_model` builds with 4 blocks, so that both token-mixer kinds occur; some are refused at load
#: with the part that is not supported (:data:`thinklens.engine.discovery.UNSUPPORTED`).
HYBRID_FAMILIES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "olmo_hybrid", "jamba", "bamba", "nemotron_h",
                   "granitemoehybrid", "lfm2", "lfm2_moe", "lfm3", "falcon_h1", "kimi_linear", "minimax", "bailing_hybrid",
                   "mamba", "mamba2", "falcon_mamba", "recurrent_gemma", "zamba", "zamba2", "dbrx", "deepseek_v4", "hy_v4",
                   "qwen4_exp_text", "longcat_flash", "lara_mini", "rwkv", "xlstm")
#: Config fields shrunk for a tiny hybrid model (each only where the family's config has it).
_HYBRID_SHRINK: dict[str, Any] = dict(
    intermediate_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
    linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4, linear_num_heads=4,
    linear_head_dim=8, moe_intermediate_size=32, shared_expert_intermediate_size=32, num_experts=4, num_local_experts=4,
    n_routed_experts=4, num_experts_per_tok=2, num_experts_per_token=2, num_expert_group=1, topk_group=1,
    mamba_d_state=8, mamba_dt_rank=4, mamba_n_heads=4, mamba_d_head=16,
    mamba_n_groups=1, mamba_chunk_size=16, state_size=8, time_step_rank=4, expand=2, n_groups=1, chunk_size=16,
    num_heads=4, ssm_state_size=8, attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1,
    qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8, lru_width=32, attention_window_size=SLIDING_WINDOW,
    sliding_window=SLIDING_WINDOW, tie_word_embeddings=False)


def _hybrid_quirks(family: str, n_layers: int) -> dict[str, Any]:
    """Per-family fields that make both token-mixer kinds occur in ``n_layers`` blocks (and keep shapes consistent)."""
    alt = lambda a, b: [a if i % 2 == 0 else b for i in range(n_layers)]  # noqa: E731
    return {
        "bamba": dict(attn_layer_indices=[i for i in range(n_layers) if i % 2]),
        "granitemoehybrid": dict(layer_types=alt("linear_attention", "attention"), shared_intermediate_size=32),
        "lfm2": dict(layer_types=alt("conv", "full_attention")),
        "lfm2_moe": dict(layer_types=alt("conv", "full_attention"), num_dense_layers=1),
        "kimi_linear": dict(mlp_layer_types=alt("dense", "sparse"), layer_types=alt("linear_attention", "full_attention"),
                            num_attention_heads=4, num_key_value_heads=4),
        "falcon_h1": dict(mamba_d_ssm=64, mamba_n_heads=4, mamba_d_head=16),
        "mamba2": dict(num_heads=4, head_dim=16),
        "zamba2": dict(layers_block_type=alt("mamba", "hybrid"), mamba_headdim=16, n_mamba_heads=4),
        "zamba": dict(attn_layer_period=2, attn_layer_offset=1, mamba_dt_rank=4),
        "recurrent_gemma": dict(block_types=["recurrent", "attention"], head_dim=8, lru_width=32),
        "minimax": dict(layer_types=alt("full_attention", "linear_attention")),
        "bailing_hybrid": dict(layer_group_size=2, num_key_value_heads=4, qk_rope_head_dim=8, qk_nope_head_dim=8),
        "dbrx": dict(n_heads=4, n_layers=n_layers, max_seq_len=128,
                     attn_config={"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0},
                     ffn_config={"ffn_hidden_size": 64, "moe_num_experts": 4, "moe_top_k": 2}),
        "qwen4_exp_text": dict(ngram_vocab_size_base=256, heads_per_ngram=2, indexer_n_heads=2, indexer_kv_heads=1,
                               indexer_head_dim=8, indexer_budget=8, indexer_compress_ratio=2),
        "longcat_flash": dict(ffn_hidden_size=64, expert_ffn_hidden_size=32, zero_expert_num=2, kv_lora_rank=16,
                              q_lora_rank=16, num_key_value_heads=4, head_dim=4, moe_topk=2),
        "nemotron_h": dict(layer_types=["linear_attention", "moe", "full_attention", "mlp"][:n_layers]),
    }.get(family, {})


def _hybrid_config(family: str, d_model: int, n_layers: int, common: dict[str, Any]) -> Any:
    """A tiny config of a hybrid / recurrent ``family``: the family's defaults shrunk (:data:`_HYBRID_SHRINK`)."""
    import transformers as tf

    defaults = tf.AutoConfig.for_model(family).to_dict()
    kw = {k: v for k, v in _HYBRID_SHRINK.items() if k in defaults}
    for key in ("hidden_size", "d_model"):
        if key in defaults:
            kw[key] = d_model
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if key in defaults:
            kw[key] = n_layers
    types = defaults.get("layer_types")
    if isinstance(types, list) and types:  # every kind of the family's default pattern, cycled over the tiny blocks
        kinds = list(dict.fromkeys(types))
        kw["layer_types"] = [kinds[i % len(kinds)] for i in range(n_layers)]
    return tf.AutoConfig.for_model(family, **{**kw, **_hybrid_quirks(family, n_layers), **common})


def _quirks(family: str, d_model: int, n_layers: int, n_heads: int, d_mlp: int, n_ctx: int) -> dict[str, Any]:
    """Config fields a tiny ``family`` model needs beyond the common ones (MoE sizes, MLA ranks, windows)."""
    head_dim = d_model // n_heads
    alternating = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n_layers)]
    moe = dict(num_experts_per_tok=2, moe_intermediate_size=d_mlp // 2)
    return {
        "mistral": dict(sliding_window=SLIDING_WINDOW),
        "qwen3": dict(head_dim=head_dim),
        "qwen3_moe": dict(head_dim=head_dim, num_experts=4, decoder_sparse_step=1, norm_topk_prob=True, **moe),
        "gemma2": dict(head_dim=head_dim, query_pre_attn_scalar=head_dim, sliding_window=SLIDING_WINDOW),
        "gemma3_text": dict(head_dim=head_dim, query_pre_attn_scalar=head_dim, sliding_window=SLIDING_WINDOW,
                            layer_types=alternating),
        "phi3": dict(original_max_position_embeddings=n_ctx),
        "gpt_neox": dict(rotary_pct=0.5),
        "olmo3": dict(sliding_window=SLIDING_WINDOW, layer_types=alternating),
        # non-trivial multipliers: the embedding and residual scalings sit outside the embedding and the blocks
        "granite": dict(embedding_multiplier=2.0, residual_multiplier=0.5, attention_multiplier=1.0 / head_dim,
                        logits_scaling=2.0),
        "smollm3": dict(no_rope_layers=[1 if i % 2 == 0 else 0 for i in range(n_layers)]),
        "gpt_oss": dict(head_dim=head_dim, num_local_experts=4, num_experts_per_tok=2, sliding_window=SLIDING_WINDOW,
                        layer_types=alternating, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        # multi-head latent attention (low-rank q and kv; one kv head per query head, as the real configs),
        # block 0 dense, block 1 MoE with a shared expert
        "deepseek_v3": dict(q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8,
                            num_key_value_heads=n_heads, n_routed_experts=4, n_shared_experts=1, n_group=1, topk_group=1,
                            first_k_dense_replace=1,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **moe),
        "phi": dict(partial_rotary_factor=0.5),
        "opt": dict(ffn_dim=d_mlp, word_embed_proj_dim=d_model),
    }.get(family, {})


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
    elif family in HYBRID_FAMILIES:
        cfg = _hybrid_config(family, d_model, max(n_layers, 4), common)
        model_cls = tf.AutoModelForCausalLM.from_config
    elif family in TINY_FAMILIES:
        fields = dict(hidden_size=d_model, intermediate_size=d_mlp, num_hidden_layers=n_layers, num_attention_heads=n_heads,
                      num_key_value_heads=max(1, n_heads // 2), max_position_embeddings=n_ctx, **common)
        cfg = tf.AutoConfig.for_model(family, **{**fields, **_quirks(family, d_model, n_layers, n_heads, d_mlp, n_ctx)})
        model_cls = tf.AutoModelForCausalLM.from_config
    else:
        raise ThinklensError.of("family", family, f"one of {', '.join(TINY_FAMILIES + HYBRID_FAMILIES)}", "pick a listed family")
    torch.manual_seed(seed)  # HF init draws from the global RNG; only test code calls this
    model = model_cls(cfg)
    path = Path(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# ------------------------------------------------------------------------------------ family checks
# Oracles shared by tests/core/test_architecture_families.py and bench/families.py: each raises AssertionError on a mismatch.

#: Left-padded prompts; the longest plus 8 new tokens runs past ``SLIDING_WINDOW``.
CHECK_PROMPTS = ("w1 w2 w3 w4 w5 w6", "w7 w8", "w9 w10 w11 w12")


def check_capture(model: Any, prompts: Any = CHECK_PROMPTS, atol: float = 1e-5) -> None:
    """Capture equals HF ``output_hidden_states`` at every ``resid_pre`` / ``resid_post`` and ``final_norm``
    (real tokens of a left-padded batch)."""
    from thinklens.engine.sites import Site

    n = model.n_layers
    sites = [Site(k, i) for k in ("resid_pre", "resid_post") for i in range(n)] + [Site("final_norm")]
    batch = model.capture(list(prompts), sites)
    enc = model.tokenize(list(prompts))
    real = enc["attention_mask"].bool()  # [batch, pos]
    with torch.no_grad():
        hidden = model.hf(**enc, position_ids=model.position_ids(enc["attention_mask"]), output_hidden_states=True).hidden_states
    assert len(hidden) == n + 1, f"{len(hidden)} hidden states for {n} blocks"
    if model.adapter.hidden_states == "outputs":  # Mamba: block outputs, then the final norm; resid_pre.i+1 = resid_post.i
        pairs = [(Site("resid_post", i), hidden[i]) for i in range(n - 1)] + [(Site("final_norm"), hidden[n])]
        pairs += [(Site("resid_pre", i + 1), hidden[i]) for i in range(n - 1)]
        with torch.no_grad():
            pairs.append((Site("resid_pre", 0), model.embed(enc["input_ids"])))
    else:
        pairs = [(Site("resid_pre", i), hidden[i]) for i in range(n)]
        pairs += [(Site("resid_post", i), hidden[i + 1]) for i in range(n - 1)] + [(Site("final_norm"), hidden[n])]
    for site, ref in pairs:
        torch.testing.assert_close(batch[site][real], ref[real], atol=atol, rtol=0, msg=lambda m, s=site: f"{s}: {m}")


def check_generate(model: Any, prompts: Any = CHECK_PROMPTS, max_new_tokens: int = 8) -> None:
    """Greedy tokens of ``model.generate`` equal HF ``generate`` (left padding, KV cache)."""
    traces = model.generate(list(prompts), max_new_tokens=max_new_tokens)
    enc = model.tokenize(list(prompts))
    ref = model.hf.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                            pad_token_id=model.tokenizer.pad_token_id)
    for r, trace in enumerate(traces):
        want = ref[r, enc["input_ids"].shape[1]:].tolist()[: len(trace)]
        assert trace.token_ids == want, f"row {r}: ours {trace.token_ids} vs HF {want}"


def check_interventions(model: Any, prompts: Any = CHECK_PROMPTS) -> None:
    """AddVector adds exactly at its site (the residual, the last MLP, the first attention and the first
    non-attention mixer); ReplaceActivation there writes exactly its values and changes the logits;
    InjectEmbeddings equals HF run on the edited embeddings; RepeatBlock changes the output and equals its
    oracle at every block (the input replaced by the first output), in a plain forward and in a cached decoding
    step (with the cache length kept; recurrent layers' states as the oracle's)."""
    from thinklens.engine.interventions import AddVector, InjectEmbeddings, ReplaceActivation
    from thinklens.engine.sites import Site

    gen = torch.Generator().manual_seed(0)
    real = model.tokenize(list(prompts))["attention_mask"].bool()  # [batch, pos]
    sites = [Site("resid_post", 0)]
    for kind, last in (("mlp_out", True), ("attn_out", False), ("mixer_out", False)):
        have = [s for s in model.sites if s.kind == kind]
        sites += [have[-1] if last else have[0]] if have else []
    clean_logits = model.forward_with(list(prompts))
    for site in sites:
        v = torch.randn(model.d_model, generator=gen)
        orig = model.capture(list(prompts), [site])[site]
        steered = model.capture(list(prompts), [site], interventions=[AddVector(site, v, scale=2.5)])[site]
        streams = lambda t: t.unflatten(-1, (-1, model.d_model))  # noqa: E731 - a flat multi-stream residual per stream
        assert torch.equal(streams(steered[real]), (streams(orig) + 2.5 * v)[real]), f"AddVector at {site}"
        assert torch.equal(steered[~real], orig[~real]), f"AddVector at {site} touched padding"
        replace_iv = [ReplaceActivation(site, v, positions=[1])]
        replaced = model.capture(list(prompts), [site], interventions=replace_iv)[site]
        at1 = (model.position_ids(real.long()) == 1) & real
        assert torch.equal(streams(replaced[at1]), v.expand_as(streams(replaced[at1]))), f"ReplaceActivation at {site}"
        assert torch.equal(replaced[~at1 & real], orig[~at1 & real]), f"ReplaceActivation at {site} touched other positions"
        assert not torch.allclose(model.forward_with(list(prompts), replace_iv), clean_logits), f"ReplaceActivation at {site} inert"

    ids = model.tokenize([prompts[0]])["input_ids"]  # [1, pos]
    new = torch.randn(1, 2, model.d_model, generator=gen)
    manual = model.embed(ids).clone()
    manual[:, 1:3] = new
    with torch.no_grad():
        try:
            ref = model.hf(inputs_embeds=manual).logits
        except (AttributeError, TypeError, ValueError):  # routing by token id (DeepSeek-V4's hash experts) needs the ids:
            # HF run on the ids with the embedding module's output replaced by a plain torch hook
            handle = model.hf.get_input_embeddings().register_forward_hook(lambda mod, args, out: manual)
            try:
                ref = model.hf(input_ids=ids).logits
            finally:
                handle.remove()
    got = model.forward_with(ids, [InjectEmbeddings(values=new, positions=[1, 2])])
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0, msg=lambda m: f"InjectEmbeddings: {m}")

    clean = model.forward_with(ids)
    for layer in range(model.n_layers):  # sliding-window and full-attention blocks alike
        check_repeat_block(model, ids, layer, clean)


def check_repeat_block(model: Any, ids: torch.Tensor, layer: int, clean: torch.Tensor,
                       atol: Callable[[torch.Tensor, torch.dtype | None], float] = lambda ref, dtype: 1e-5) -> None:
    """RepeatBlock(layer) equals its oracle (the block's output fed back as its input), in one forward and in a
    KV-cached decoding step whose cache does not grow twice. ``atol(reference, dtype)``: the tolerance (the GPU
    tier passes one scaled to the weights' dtype; the step logits come back as float32 computed in that dtype)."""
    from thinklens.engine.interventions import HookFn, RepeatBlock, ReplaceActivation
    from thinklens.engine.sites import Site
    from thinklens.generation.kv_batch import Decoder, new_cache

    first = model.capture(ids, [Site("resid_post", layer)])[Site("resid_post", layer)]
    repeated = model.forward_with(ids, [RepeatBlock(layer)])
    oracle = model.forward_with(ids, [ReplaceActivation(Site("resid_pre", layer), lambda a, c: first)])
    torch.testing.assert_close(repeated, oracle, atol=atol(oracle, None), rtol=0, msg=lambda m: f"RepeatBlock({layer}) forward: {m}")
    assert not torch.allclose(repeated, clean), f"RepeatBlock({layer}) left the logits unchanged"

    if model.adapter.module_state or _own_cache_layers(model, ids) or len(getattr(new_cache(model), "layers", ())) > model.n_layers:
        # the recurrent state lives in the modules (RecurrentGemma), or the family's own cache layers cannot be
        # cropped exactly (DeepSeek-V4): a one-line refusal
        from thinklens.errors import ThinklensError

        with torch.no_grad():
            dec = Decoder(model, ids)
            dec.step(dec.prefill().argmax(-1))
            try:
                with model.intervene([RepeatBlock(layer, positions="last")]):
                    dec.step(torch.tensor([7]))
            except ThinklensError as e:
                assert "RepeatBlock" in str(e) and "\n" not in str(e).strip(), f"RepeatBlock({layer}) refusal: {e}"
            else:
                raise AssertionError(f"RepeatBlock({layer}) ran during cached decoding of a module-state model")
        return
    if _has_recurrent_cache(model, ids):
        _check_repeat_block_recurrent(model, ids, layer, atol)
        return
    with torch.no_grad():  # the same during KV-cached decoding: the repeated block's keys are not appended twice
        dec = Decoder(model, ids)
        dec.step(dec.prefill().argmax(-1))
        nxt = torch.tensor([7])
        out1: dict[str, torch.Tensor] = {}
        with model.intervene([HookFn(Site("resid_post", layer), lambda a, c: out1.__setitem__("h", a[:, -1].clone()))]):
            dec.step(nxt)
        n_regular = [lay.get_seq_length() for lay in dec.cache.layers]
        dec.rollback(1)
        with model.intervene([RepeatBlock(layer, positions="last")]):
            rr = dec.step(nxt)
        n_rr = [lay.get_seq_length() for lay in dec.cache.layers]
        keys_rr = dec.cache.layers[layer].keys.clone()
        dec.rollback(1)
        with model.intervene([ReplaceActivation(Site("resid_pre", layer), lambda a, c: out1["h"][:, None].expand_as(a),
                                                positions="last")]):
            step_oracle = dec.step(nxt)
        keys_oracle = dec.cache.layers[layer].keys.clone()
    assert n_rr == n_regular, f"RepeatBlock({layer}) cache length {n_rr} vs {n_regular}"
    dtype = next(model.hf.parameters()).dtype
    torch.testing.assert_close(rr, step_oracle, atol=atol(step_oracle, dtype), rtol=0,
                               msg=lambda m: f"RepeatBlock({layer}) decoding: {m}")
    # the cache keeps the block's keys of the repeated pass (its input: the first output), as the oracle's
    torch.testing.assert_close(keys_rr, keys_oracle, atol=atol(keys_oracle, dtype), rtol=0,
                               msg=lambda m: f"RepeatBlock({layer}) cached keys: {m}")


def _own_cache_layers(model: Any, ids: torch.Tensor) -> bool:
    """Whether ``model``'s cache, once the prompt ran, holds layers of the family's own classes (DeepSeek-V4)."""
    from thinklens.generation.kv_batch import Decoder

    dec = Decoder(model, ids)
    with torch.no_grad():
        dec.prefill()
    return any(not type(lay).__module__.startswith("transformers.cache_utils") for lay in getattr(dec.cache, "layers", ()))


def _has_recurrent_cache(model: Any, ids: torch.Tensor) -> bool:
    """Whether ``model``'s cache holds linear-attention / SSM layers (their state cannot be rolled back)."""
    from transformers.cache_utils import LinearAttentionCacheLayerMixin

    from thinklens.generation.kv_batch import new_cache

    cache = new_cache(model)
    return getattr(type(cache), "is_croppable", True) is False or any(
        isinstance(lay, LinearAttentionCacheLayerMixin) for lay in getattr(cache, "layers", ()))


def _check_repeat_block_recurrent(model: Any, ids: torch.Tensor, layer: int,
                                  atol: Callable[[torch.Tensor, torch.dtype | None], float]) -> None:
    """RepeatBlock(layer) in a cached decoding step of a model with recurrent cache layers: three decoders from the
    same prompt (no rollback: a recurrent state cannot be rolled back): the regular step (its block output), the
    repeated step and the oracle step (ReplaceActivation of the block input by that output) give the same logits,
    and the repeated layer's cache state (keys, or conv / recurrent states) equals the oracle's."""
    from thinklens.engine.interventions import HookFn, RepeatBlock, ReplaceActivation
    from thinklens.engine.sites import Site
    from thinklens.generation.kv_batch import Decoder

    nxt = torch.tensor([7])

    def stepped(interventions: list) -> tuple[torch.Tensor, Decoder]:
        dec = Decoder(model, ids)
        dec.step(dec.prefill().argmax(-1))
        with model.intervene(interventions):
            return dec.step(nxt), dec

    with torch.no_grad():
        out1: dict[str, torch.Tensor] = {}
        stepped([HookFn(Site("resid_post", layer), lambda a, c: out1.__setitem__("h", a[:, -1].clone()))])
        rr, dec_rr = stepped([RepeatBlock(layer, positions="last")])
        oracle, dec_oracle = stepped([ReplaceActivation(Site("resid_pre", layer),
                                                        lambda a, c: out1["h"][:, None].expand_as(a), positions="last")])
    dtype = next(model.hf.parameters()).dtype
    torch.testing.assert_close(rr, oracle, atol=atol(oracle, dtype), rtol=0, msg=lambda m: f"RepeatBlock({layer}) decoding: {m}")
    if hasattr(dec_rr.cache, "linear_cache") and layer < len(dec_rr.cache.linear_cache):  # MiniMax's own cache
        ours, theirs = dec_rr.cache.linear_cache[layer], dec_oracle.cache.linear_cache[layer]
        if isinstance(ours, torch.Tensor):
            torch.testing.assert_close(ours, theirs, atol=atol(oracle, dtype), rtol=0,
                                       msg=lambda m: f"RepeatBlock({layer}) cached linear state: {m}")
    if layer >= len(dec_rr.cache.layers):
        return
    a, b = dec_rr.cache.layers[layer], dec_oracle.cache.layers[layer]
    for name in ("keys", "values"):
        if isinstance(getattr(a, name, None), torch.Tensor):
            torch.testing.assert_close(getattr(a, name), getattr(b, name), atol=atol(oracle, dtype), rtol=0,
                                       msg=lambda m, n=name: f"RepeatBlock({layer}) cached {n}: {m}")
    for name in ("conv_states", "recurrent_states"):
        for k, t in (getattr(a, name, None) or {}).items():
            if isinstance(t, torch.Tensor):
                torch.testing.assert_close(t, getattr(b, name)[k], atol=atol(oracle, dtype), rtol=0,
                                           msg=lambda m, n=name: f"RepeatBlock({layer}) cached {n}: {m}")


def check_family(family: str, root: str | Path) -> dict[str, str]:
    """Build, save and load a tiny ``family`` model and run every check: ``{check: "ok" or the reason}``
    for ``load``, ``capture``, ``generate`` and ``interventions``, and ``adapter``: where its module paths
    came from (what ``bench/families.py`` prints)."""
    from thinklens.engine.model import HookedModel

    report: dict[str, str] = {}
    try:
        model = HookedModel.load(str(build_tiny_model(family, Path(root) / family)))
        report["load"] = "ok"
        report["adapter"] = model.adapter.source
    except Exception as e:  # noqa: BLE001 - a refused family is a result to report
        return {"load": f"{type(e).__name__}: {e}"}
    for name, check in (("capture", check_capture), ("generate", check_generate), ("interventions", check_interventions)):
        try:
            check(model)
            report[name] = "ok"
        except Exception as e:  # noqa: BLE001 - each check reports its own failure
            report[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return report


# ---------------------------------------------------------------- kills, resumes and unreachable servers


def dies_after(fn: Callable[..., Any], n_calls: int) -> Callable[..., Any]:
    """``fn`` that is killed (``KeyboardInterrupt``) at its call number ``n_calls + 1``: patched over a trainer's
    batch function, it stops a run after ``n_calls`` steps, as a kill would.

    Example:
        >>> f = dies_after(abs, 1)
        >>> f(-2)
        2
        >>> try:
        ...     f(-2)
        ... except KeyboardInterrupt:
        ...     print("killed")
        killed
    """
    calls = 0

    def dying(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > n_calls:
            raise KeyboardInterrupt
        return fn(*args, **kwargs)

    return dying


def assert_same_weights(a: str | Path, b: str | Path) -> None:
    """The ``model.safetensors`` of model folders ``a`` and ``b`` hold the same tensors, bit for bit."""
    from safetensors.torch import load_file

    wa, wb = load_file(str(Path(a) / "model.safetensors")), load_file(str(Path(b) / "model.safetensors"))
    assert wa.keys() == wb.keys(), f"tensor names differ: {sorted(wa.keys() ^ wb.keys())}"
    differ = [k for k in wa if not torch.equal(wa[k], wb[k])]
    assert not differ, f"tensors differ: {differ}"


def unreachable_ndif(monkeypatch: Any, lm: Any, method: str) -> dict[str, Any]:
    """Make ``lm.<method>`` (an nnsight entry such as ``trace`` or ``generate``) fail as an unreachable NDIF server
    would (``ConnectionError`` on entering its context); returns the keyword arguments it was called with, filled
    in by the call."""
    import contextlib

    calls: dict[str, Any] = {}

    @contextlib.contextmanager
    def refuse(*args: Any, **kwargs: Any):
        calls.update(kwargs)
        raise ConnectionError("no route to NDIF")
        yield

    monkeypatch.setattr(type(lm), method, lambda self, *a, **k: refuse(*a, **k))
    return calls
