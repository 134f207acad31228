"""Imported traces (teacher-forced states of completions made elsewhere) against traced generation of the same tokens."""

import json

import pytest
import torch

from thinklens import HookedModel, ThinklensError
from thinklens.data.import_traces import import_traces, load_traces, read_record, read_records
from thinklens.generation.trace import trace_from_json, trace_to_json

SITES = ["resid_post.1", "final_norm"]


@pytest.fixture(scope="module")
def think():
    """tiny-think and four zoo prompts of 1..4 steps (different lengths), with their gold answers."""
    from thinklens.tasks.protocol import problems_by_steps
    from thinklens.tasks.render import render_prompt

    problems = problems_by_steps(1, 1, 4, seed=5)
    return HookedModel.load("tiny-think"), [render_prompt(p, "think") for p in problems], [str(p.answer) for p in problems]


def assert_same_trace(imported, generated, sites, *, scaled):
    """States, entropy and top-k of ``imported`` equal those recorded while ``generated`` was generated.

    States within 1e-5, or with ``scaled`` within 1e-5 x the state's largest magnitude: tiny-think's
    residual stream reaches |x| ~ 300, where float32's spacing (3e-5) is above an absolute 1e-5 and the
    rounding of every element grows with it; generation itself differs by 6e-5 there between batch sizes.
    """
    n = len(imported)
    assert imported.token_ids == generated.token_ids[:n] and imported.prompt_ids == generated.prompt_ids
    assert imported.stop_reason == "imported" and imported.tokens == generated.tokens[:n]
    for s in sites:
        want = generated.hidden[s][:n]
        assert imported.hidden[s].dtype == torch.float32 and imported.hidden[s].shape == (n, want.shape[1])
        tol = 1e-5 * max(1.0, float(want.abs().max())) if scaled else 1e-5
        torch.testing.assert_close(imported.hidden[s], want, atol=tol, rtol=0)
    torch.testing.assert_close(imported.entropy, generated.entropy[:n], atol=1e-5, rtol=0)
    torch.testing.assert_close(imported.topk_probs, generated.topk_probs[:n], atol=1e-5, rtol=0)
    assert torch.equal(imported.topk_ids, generated.topk_ids[:n])


def test_greedy_text_completions_equal_traced_generation(think):
    """Completions as text (special tokens kept, as vLLM with skip_special_tokens=False), EOS not in the text."""
    m, prompts, _ = think
    gen = m.generate(prompts, max_new_tokens=40, capture=SITES)
    assert len({len(g) for g in gen}) == 4 and all(g.stop_reason == "eos" for g in gen)
    records = [{"prompt": g.prompt, "completion": m.tokenizer.decode(g.token_ids[:-1])} for g in gen]
    imported = import_traces(m, records, sites=SITES, batch_size=3)  # batches mix lengths; sorted by length inside
    sites = m.resolve_sites(SITES)
    for imp, g in zip(imported, gen):
        assert len(imp) == len(g) - 1  # the text ends before EOS
        assert_same_trace(imp, g, sites[1:], scaled=False)  # final_norm: |x| < 10, absolute 1e-5 holds
        assert_same_trace(imp, g, sites[:1], scaled=True)


def test_sampled_token_ids_equal_traced_generation(think):
    m, prompts, _ = think
    gen = m.generate(prompts, max_new_tokens=30, capture=SITES, do_sample=True, seed=7, temperature=1.3)
    records = [{"prompt": g.prompt, "completion_ids": g.token_ids} for g in gen]
    imported = import_traces(m, records, sites=SITES, batch_size=4)
    for imp, g in zip(imported, gen):
        assert len(imp) == len(g)
        assert_same_trace(imp, g, m.resolve_sites(SITES), scaled=True)


@pytest.mark.parametrize("fam", ["llama", "qwen2", "gpt2", "gemma"])
def test_tiny_families_equal_at_absolute_1e5(tiny_models, fam):
    """On tiny random models (|x| ~ 1) every state equals generation's at atol 1e-5 (rtol 0)."""
    m = tiny_models[fam]
    prompts = ["w1 w2 w3 w4", "w5 w6", "w7 w8 w9 w10 w11 w12 w13"]
    gen = m.generate(prompts, max_new_tokens=9, capture=["resid_post.*", "embed", "final_norm"])
    imported = import_traces(m, [{"prompt": p, "completion_ids": g.token_ids} for p, g in zip(prompts, gen)],
                             sites=["resid_post.*", "embed", "final_norm"], batch_size=2)
    for imp, g in zip(imported, gen):
        assert_same_trace(imp, g, m.resolve_sites(["resid_post.*", "embed", "final_norm"]), scaled=False)


def test_job_writes_run_folder_and_reads_back(think, tmp_path):
    from thinklens import run_job

    m, prompts, golds = think
    gen = m.generate(prompts, max_new_tokens=40, capture=["resid_post.*"])
    data = tmp_path / "completions.jsonl"
    rows = [{"question_text": g.prompt, "output": m.tokenizer.decode(g.token_ids[:-1]), "gold": a, "id": f"p{k}"}
            for k, (g, a) in enumerate(zip(gen, golds))]
    data.write_text("\n".join(json.dumps(r) for r in rows[:2]) + "\n\n" + "\n".join(json.dumps(r) for r in rows[2:]) + "\n")
    res = run_job("import-traces", model=m, data=str(data), data_fields="prompt=question_text,completion=output",
                  sites=("resid_post.*",), batch_size=2, runs=str(tmp_path / "runs"), run_id="imp", progress=False)
    assert res.sites == [f"resid_post.{i}" for i in range(m.n_layers)] and res.n_traces == 4
    assert res.n_tokens == sum(len(g) - 1 for g in gen) and res.n_graded == 4 and res.accuracy == 1.0
    back = res.traces()
    doc = json.loads((tmp_path / "runs/import-traces/imp/results/traces.json").read_text())
    assert [d["line"] for d in doc["traces"]] == [1, 2, 4, 5] and doc["traces"][0]["id"] == "p0"
    for b, g in zip(back, gen):
        assert_same_trace(b, g, m.resolve_sites("resid_post.*"), scaled=True)
    meta = json.loads((tmp_path / "runs/import-traces/imp/meta.json").read_text())
    assert meta["status"] == "done" and meta["summary"]["store"] == "store"
    again = run_job("import-traces", model=m, data=str(data), data_fields="prompt=question_text,completion=output",
                    sites=("resid_post.*",), batch_size=2, runs=str(tmp_path / "runs"), run_id="imp", progress=False)
    assert sum(len(t) for t in load_traces(again.run)) == res.n_tokens  # a rerun rewrites, never appends


def test_trace_json_keeps_logit_stats(think):
    m, prompts, _ = think
    (tr,) = import_traces(m, [{"prompt": prompts[0], "completion": "<< 3 + 4"}], top_k=3)
    doc = json.loads(json.dumps(trace_to_json(tr, logit_stats=True)))
    back = trace_from_json(doc)
    assert torch.equal(back.entropy, tr.entropy) and torch.equal(back.topk_ids, tr.topk_ids)
    assert torch.equal(back.topk_probs, tr.topk_probs) and back.topk_ids.shape == (4, 3)
    assert "entropy" not in trace_to_json(tr) and trace_from_json(trace_to_json(tr)).entropy is None
    empty, one = import_traces(m, [{"prompt": prompts[0], "completion": ""}, {"prompt": prompts[1], "completion": "<<"}],
                               sites=["final_norm"], top_k=3)  # an empty completion is a trace of 0 steps
    assert len(empty) == 0 and empty.hidden[m.resolve_site("final_norm")].shape == (0, m.d_model) and len(one) == 1
    assert trace_from_json(json.loads(json.dumps(trace_to_json(empty, logit_stats=True)))).topk_ids.shape[0] == 0


def test_messages_use_the_chat_template(think):
    import copy

    m, _, _ = think
    tok = copy.deepcopy(m.tokenizer)
    tok.chat_template = ("{% for x in messages %}{{ x['role'] }} : {{ x['content'] }} ; {% endfor %}"
                         "{% if add_generation_prompt %}assistant :{% endif %}")
    chat = HookedModel(m.hf, tok, name="chat")
    msgs = [{"role": "user", "content": "Tom has 3 apples ."}]
    a, b = import_traces(chat, [{"messages": msgs, "response": "<< 3 + 4"},
                                {"messages": msgs + [{"role": "assistant", "content": "<< 3 + 4"}]}])
    rendered = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert a.prompt == b.prompt == rendered and a.prompt_ids == tok(rendered)["input_ids"]
    assert a.token_ids == b.token_ids == tok("<< 3 + 4", add_special_tokens=False)["input_ids"]
    with pytest.raises(ThinklensError, match="chat template"):
        import_traces(m, [{"messages": msgs, "response": "x"}])


def test_errors_name_the_line_and_the_fields(think, tmp_path):
    m, prompts, _ = think
    with pytest.raises(ThinklensError, match=r"completion on line 3 \(fields present: prompt, output\).*data_fields='completion=output'"):
        read_record({"prompt": "p", "output": "c"}, 3)
    with pytest.raises(ThinklensError, match="did you mean 'completion'"):
        read_record({"prompt": "p"}, 1, "complettion=output")
    with pytest.raises(ThinklensError, match=r"mapped field completion=out on line 2.*did you mean 'output'"):
        read_record({"prompt": "p", "output": "c"}, 2, {"completion": "out"})
    with pytest.raises(ThinklensError, match="completion_ids on line 1"):
        read_record({"prompt": "p", "completion_ids": [1, "x"]}, 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "completion": "c"}\n{"prompt": \n')
    with pytest.raises(ThinklensError, match="line 2 of"):
        read_records(bad)
    with pytest.raises(ThinklensError, match=r"token ids on line 1.*vocabulary"):
        import_traces(m, [{"prompt": prompts[0], "completion_ids": [m.vocab_size + 5]}])
    with pytest.raises(ThinklensError, match="length of line 1"):
        import_traces(m, [{"prompt": prompts[0], "completion_ids": [5] * (m.max_context + 1)}])
    with pytest.raises(ThinklensError, match="data"):
        from thinklens import run_job

        run_job("import-traces", model=m, runs=str(tmp_path / "runs"), progress=False)
