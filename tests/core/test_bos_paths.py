"""Every path that tokenizes a prompt reads it as generation does, on a model whose chat template writes the BOS
token and whose tokenizer adds one too (the R1 distills): imported traces, the SAE corpus, hybrid generation and
the hybrid job, LatentSeek, the self-confidence reward and the latent data sets all see ``[bos, ...]``, never
``[bos, bos, ...]``. The oracle is the prompt ids of a generated trace."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from thinklens.engine.model import HookedModel
from tools.testing import build_tiny_model

BOS = 3
TEMPLATE = ("{{ bos_token }}{% for m in messages %}{{ m['content'] }} {% endfor %}"
            "{% if add_generation_prompt %}w9 w10{% endif %}")


def _bos_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {w: i for i, w in enumerate(["<pad>", "<eos>", "<unk>", "<bos>", *(f"w{i}" for i in range(60))])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split("<bos>", behavior="isolated"),
                                                 pre_tokenizers.Whitespace()])
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", BOS)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>",
                                   bos_token="<bos>")
    fast.chat_template = TEMPLATE
    return fast


@pytest.fixture(scope="module")
def bos_model(tmp_path_factory):
    torch.set_num_threads(1)
    path = build_tiny_model("llama", tmp_path_factory.mktemp("bos") / "m", tokenizer=_bos_tokenizer())
    return HookedModel.load(str(path))


def _chat(model, text="w1 w2 w3"):
    return model.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                               tokenize=False)


def _generated_ids(model, prompt) -> list[int]:
    (tr,) = model.generate([prompt], max_new_tokens=1)
    return tr.prompt_ids


def test_the_folder_writes_two_bos_when_read_naively_and_generation_reads_one(bos_model):
    prompt = _chat(bos_model)
    assert prompt.startswith("<bos>")
    assert bos_model.tokenizer(prompt)["input_ids"][:2] == [BOS, BOS]  # the mistake each path used to make
    ids = _generated_ids(bos_model, prompt)
    assert ids[0] == BOS and ids[1] != BOS


def test_imported_traces_and_the_sae_corpus(bos_model):
    from thinklens.data.import_traces import ImportRecord, tokenize_record
    from thinklens.steering.corpora import encode

    prompt = _chat(bos_model)
    gen = _generated_ids(bos_model, prompt)
    _, ids, _ = tokenize_record(bos_model, ImportRecord(line=1, prompt=prompt, completion="w4 w5"))
    assert ids == gen
    _, ids, _ = tokenize_record(bos_model, ImportRecord(line=1, messages=({"role": "user", "content": "w1 w2 w3"},),
                                                        completion="w4"))
    assert ids == gen
    assert encode(bos_model.tokenizer, [prompt], add_eos=False) == [gen]


def test_hybrid_generation_and_the_hybrid_job(bos_model, monkeypatch, tmp_path):
    import thinklens.steering.hybrid
    import thinklens.steering.hybrid_generate as hg
    from thinklens.runs.jobs import run_job
    from thinklens.steering.hybrid import HybridConfig

    seen: list = []
    real = hg.Decoder

    def spy(model, inputs=None, **kw):
        seen.append(inputs)
        return real(model, inputs, **kw)

    monkeypatch.setattr(hg, "Decoder", spy)
    prompts = [_chat(bos_model), _chat(bos_model, "w7")]
    hg.hybrid_generate(bos_model, bos_model, None, prompts, HybridConfig(), mode="base", max_new_tokens=2)
    hg.hybrid_generate(bos_model, bos_model, None, prompts, HybridConfig(), mode="thinking", max_new_tokens=2)
    assert seen == [[_generated_ids(bos_model, p) for p in prompts]] * 2

    class Stop(Exception):
        pass

    def capture(base, thinking, traces, cfg, *, base_prompts, **kw):
        seen[:] = [base_prompts, [t.prompt_ids for t in traces]]
        raise Stop

    monkeypatch.setattr(thinklens.steering.hybrid, "train_hybrid_vectors", capture)
    with pytest.raises(Stop):
        run_job("hybrid", model=bos_model, thinking=bos_model, prompt_format="chat", n_train=2, n_eval=2, max_steps=2,
                max_new_tokens=2, n_seeds=1, modes=("hybrid",), out=tmp_path / "h", progress=False)
    base_prompts, generated = seen
    assert base_prompts == generated and all(ids[0] == BOS and ids[1] != BOS for ids in base_prompts)


def test_latent_seek_the_self_confidence_reward_and_the_latent_data(bos_model, monkeypatch):
    import thinklens.latent.seek_runs as sr
    from thinklens.latent.config import LatentSeekConfig
    from thinklens.latent.segments import make_example
    from thinklens.latent.self_reward import SelfConfidence

    class Stop(Exception):
        pass

    def capture(model, prompt, *args, **kw):
        raise Stop(prompt)

    monkeypatch.setattr(sr, "latent_seek", capture)
    cfg = LatentSeekConfig(model="x", prompt_format="chat", n_eval=1, min_steps=2, max_steps=2, reward="psrm")
    problems = sr.seek_problem_list(cfg)
    with pytest.raises(Stop) as e:
        sr.seek_problems(bos_model, problems, cfg)
    text = sr.seek_format(bos_model, cfg).render_problems([problems[0]], bos_model.tokenizer)[0]
    assert list(e.value.args[0]) == _generated_ids(bos_model, text)

    prompt = _chat(bos_model)
    gen = _generated_ids(bos_model, prompt)
    fed: list = []
    monkeypatch.setattr(bos_model, "forward_with", lambda ids, *a, **k: fed.append(ids) or torch.zeros(1, ids.shape[1], 64))
    SelfConfidence(bos_model, prompt).token_probabilities("w4 w5")
    assert fed[0][0].tolist()[: len(gen)] == gen and len(fed[0][0]) == len(gen) + 2
    assert list(make_example(bos_model.tokenizer, prompt, ["w4"], 5).prompt) == gen
