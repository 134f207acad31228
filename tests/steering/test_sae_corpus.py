"""The SAE corpus: the model's own generations by default for a problem set in a real format (token-id rows exactly
as generated), reference texts for the zoo's styles and text files, and id rows kept as they are by the encoder."""

from __future__ import annotations

import pytest

from thinklens.errors import ThinklensError
from thinklens.steering.corpora import corpus, corpus_kind, encode, token_rows


def test_generated_corpus_is_the_models_own_sampled_completions(tiny_r1, gsm8k_file):
    from thinklens.data.problemsets import load_problems
    from thinklens.engine.model import HookedModel
    from thinklens.steering.problems import data_format

    model = HookedModel.load(tiny_r1)
    rows = corpus(str(gsm8k_file), 3, seed=5, model=model, prompt_format="chat", kind="auto", max_new_tokens=8)
    prompts = data_format(model, "chat").render_problems(list(load_problems(str(gsm8k_file)))[:3], model.tokenizer)
    ref = model.generate(prompts, max_new_tokens=8, do_sample=True, seed=5, temperature=1.0)  # the oracle
    assert rows == [list(t.prompt_ids) + list(t.token_ids) for t in ref]
    texts = corpus(str(gsm8k_file), 3, seed=5, model=model, prompt_format="chat", kind="reference")
    assert all(isinstance(t, str) and t.startswith(p) for t, p in zip(texts, prompts))
    assert encode(model.tokenizer, [rows[0], "a"], add_eos=False)[0] == rows[0]  # an id row is kept as it is
    ds = token_rows(model.tokenizer, rows)
    assert [list(r)[: len(g)] for r, g in zip(ds["input_ids"], rows)] == rows


def test_corpus_kinds_and_bad_input(tmp_path):
    text_file = tmp_path / "t.txt"
    text_file.write_text("a b\n")
    assert corpus_kind("auto", str(text_file)) == "reference" and corpus_kind("generated", str(text_file)) == "generated"
    with pytest.raises(ThinklensError, match="did you mean 'generated'"):
        corpus_kind("generatd", "zoo:think")
    with pytest.raises(ThinklensError, match="pass corpus='reference'"):
        corpus(str(text_file), 1, seed=0, kind="generated")
    from thinklens.steering.jobs.sae import SAEJobConfig

    with pytest.raises(ThinklensError, match="corpus"):
        SAEJobConfig(corpus="refrence")


def test_rows_without_a_bos_drop_their_first_position_the_attention_sink():
    """SmolLM2 prepends no BOS: position 0 is a word whose residual norm dwarfs the rest (the attention sink); the SAE
    trains and evaluates from position 1 then, and rows that start with a special token keep every position."""
    from thinklens.steering.corpora import sink_slice, special_ids, token_rows
    from tools.testing import word_tokenizer

    tok = word_tokenizer()
    no_bos = token_rows(tok, ["w1 w2", "w3"])["input_ids"]
    assert sink_slice(no_bos, special_ids(tok)) == (1, None)
    with_bos = [[tok.eos_token_id, *r[:-1]] for r in no_bos]  # a special token first in every row
    assert sink_slice(with_bos, special_ids(tok)) == (None,)
    assert sink_slice([[*with_bos[0]], [*no_bos[1]]], special_ids(tok)) == (1, None)  # one row is enough
