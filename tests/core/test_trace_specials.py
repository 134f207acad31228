"""A ``</think>`` that is a special token survives in a trace's stored text, and a thinking span
that never closes (generated or imported) is named in a warning."""

from __future__ import annotations

import warnings

import pytest
import torch

from thinklens import HookedModel
from thinklens.data.import_traces import import_traces
from thinklens.generation.decode_loop import Decoded
from thinklens.generation.generate import traces_of
from thinklens.generation.trace import Trace, trace_from_json, trace_to_json


@pytest.fixture(scope="module")
def special_think(tmp_path_factory):
    """A tiny random llama whose word tokenizer makes ``<think>`` and ``</think>`` special tokens (as Qwen3's
    ``</think>`` is one in some user tokenizers)."""
    from tools.testing import build_tiny_model, word_tokenizer

    tok = word_tokenizer(20)
    tok.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    path = build_tiny_model("llama", tmp_path_factory.mktemp("special") / "m", tokenizer=tok)
    return HookedModel.load(str(path))


def _ids(model, text):
    return model.tokenizer(text, add_special_tokens=False)["input_ids"]


def test_the_special_close_is_kept_in_the_stored_text_and_a_reimport_closes_the_span(special_think):
    m = special_think
    close = m.tokenizer.convert_tokens_to_ids("</think>")
    assert close in m.tokenizer.all_special_ids
    ids = _ids(m, "w3 w4") + [close] + _ids(m, "w5") + [m.tokenizer.eos_token_id]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the span closes: no warning
        [tr] = import_traces(m, [{"prompt": "w1 w2 <think>", "completion_ids": ids}])
    assert "</think>" not in tr.text and tr.text == m.tokenizer.decode(ids, skip_special_tokens=True)  # readers' text
    assert "</think>" in tr.text_with_specials and tr.text_with_specials == m.tokenizer.decode(ids)
    back = trace_from_json(trace_to_json(tr))
    assert back.text_with_specials == tr.text_with_specials and back == trace_from_json(trace_to_json(back))
    # exported as text with its specials and imported again: the same tokens, the span closed, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [again] = import_traces(m, [{"prompt": "w1 w2 <think>", "completion": back.text_with_specials}])
    assert again.token_ids == ids
    # exported as the plain text: </think> is lost, and the import says so, naming the file's line
    with pytest.warns(UserWarning, match=r"1 of 2 imported traces \(line 2\) end inside their <think> span"):
        import_traces(m, [{"prompt": "w1 w2 <think>", "completion": back.text_with_specials},
                          {"prompt": "w1 w2 <think>", "completion": back.text}])


def test_the_import_job_records_the_warning(special_think, tmp_path):
    import json

    from thinklens.runs.jobs import run_job

    data = tmp_path / "c.jsonl"
    data.write_text(json.dumps({"prompt": "w1 <think>", "completion": "w3 w4"}) + "\n")
    with pytest.warns(UserWarning, match="end inside their <think> span"):
        res = run_job("import-traces", model=special_think, data=str(data), runs=tmp_path, run_id="i", progress=False)
    assert len(res.value.warnings) == 1 and "line 1" in res.value.warnings[0]
    assert res.summary["warnings"] == list(res.value.warnings)
    from thinklens.data.import_traces import report

    assert report(res.value).splitlines()[1].startswith("warning: 1 of 1 imported traces (line 1)")


def _decoded(rows: list[list[int]], reasons: list[str]) -> Decoded:
    width = max(map(len, rows))
    tokens = torch.tensor([r + [0] * (width - len(r)) for r in rows])  # [batch, step], padded after each row's end
    n = len(rows)
    return Decoded(tokens=tokens, lengths=[len(r) for r in rows], stop_reasons=reasons,
                   entropy=torch.zeros(n, width), topk_ids=torch.zeros(n, width, 2, dtype=torch.long),
                   topk_probs=torch.zeros(n, width, 2))


def test_generated_traces_keep_both_texts_and_warn_on_a_span_left_open_at_eos(special_think):
    m = special_think
    close, eos = m.tokenizer.convert_tokens_to_ids("</think>"), m.tokenizer.eos_token_id
    prompts = ["w1 <think>", "w1 <think>", "w1 <think>", "w2"]
    enc = m.tokenize(prompts)
    rows = [_ids(m, "w3") + [close] + _ids(m, "w4") + [eos],  # closed
            _ids(m, "w3 w4") + [eos],  # EOS inside the span: suspicious
            _ids(m, "w3 w4 w5"),  # cut by its budget: its stop reason says so
            _ids(m, "w6") + [eos]]  # no span at all
    out = _decoded(rows, ["eos", "eos", "max_new_tokens", "eos"])
    with pytest.warns(UserWarning, match=r"1 of 4 generated traces \(index 1\) end inside their <think> span, "
                                         r"</think> never written"):
        traces = traces_of(m, prompts, enc, out, [])
    assert [t.text for t in traces] == [m.tokenizer.decode(r, skip_special_tokens=True) for r in rows]
    assert traces[0].text_with_specials == m.tokenizer.decode(rows[0]) and "</think>" in traces[0].text_with_specials
    # a real call keeps both texts too
    [g] = m.generate(["w1 w2"], max_new_tokens=4)
    assert g.text == m.tokenizer.decode(g.token_ids, skip_special_tokens=True)
    assert g.text_with_specials == m.tokenizer.decode(g.token_ids)


def test_no_warning_without_a_span_family():
    from thinklens.generation.trace import open_span_warning

    tr = Trace(prompt="Q: <think>", prompt_ids=[1], token_ids=[5], tokens=["4"], text="4", stop_reason="eos")

    class NoSpan:
        chat_template = None

        def get_vocab(self):
            return {"a": 0}

    assert open_span_warning([tr], NoSpan(), what="generated") is None
