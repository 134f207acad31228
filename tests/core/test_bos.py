"""A prompt rendered by a chat template that writes the BOS token (Llama 3, the R1 distills) is tokenised with
one BOS, not two; the tokenizer is asked once whether it adds one itself."""

from __future__ import annotations

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from thinklens.engine.model import HookedModel


def _tokenizer(adds_bos: bool) -> PreTrainedTokenizerFast:
    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>", "<bos>", "a", "b", "c"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split("<bos>", behavior="isolated"), pre_tokenizers.Whitespace()])
    if adds_bos:
        tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", bos_token="<bos>")


class _Cfg:
    model_type = "llama"


def _model(tok) -> HookedModel:
    m = HookedModel.__new__(HookedModel)  # only the tokenizer path is exercised
    m.tokenizer, m._adds_bos = tok, None
    m.hf = torch.nn.Linear(1, 1)
    m.config = type("C", (), {"max_position_embeddings": 64})()
    return m


def test_one_bos_when_the_template_writes_it_and_the_tokenizer_adds_it():
    m = _model(_tokenizer(adds_bos=True))
    ids = m.tokenize(["<bos>a b", "a c"])["input_ids"].tolist()
    assert ids == [[3, 4, 5], [3, 4, 6]]


def test_template_bos_kept_when_the_tokenizer_adds_none():
    m = _model(_tokenizer(adds_bos=False))
    assert m.tokenize(["<bos>a b"])["input_ids"].tolist() == [[3, 4, 5]]
    assert m.tokenize(["a b"])["input_ids"].tolist() == [[4, 5]]
