"""Prompt formats and thinking spans: real chat templates (written here in their published shapes) applied
with a tiny tokenizer, and splits of outputs in each family's format, as text and as token lists."""

from __future__ import annotations

import pytest

from thinklens.data.formats import (
    R1_INSTRUCTION,
    SPANS,
    PromptFormat,
    detect_span,
    format_for,
    prompt_opens_span,
    split_thinking,
)
from thinklens.errors import ThinklensError

# DeepSeek-R1-Distill-Qwen's template (since 2025-02): the generation prompt opens the thinking span.
R1_TEMPLATE = (
    "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ message['content'] }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '<｜User｜>' + message['content'] }}{% endif %}"
    "{% if message['role'] == 'assistant' %}{% set content = message['content'] %}"
    "{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}"
    "{{ '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<｜Assistant｜><think>\\n' }}{% endif %}"
)
# Qwen3's: thinking on by default (the model writes <think> itself); enable_thinking=False inserts an
# empty span.
QWEN3_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)
# gpt-oss's harmony: reasoning effort in the system message; the model writes the analysis channel.
HARMONY_TEMPLATE = (
    "{{- '<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\\n' }}"
    "{{- 'Reasoning: ' + (reasoning_effort | default('medium')) + '\\n\\n' }}"
    "{{- '# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>' }}"
    "{%- for message in messages %}{%- if message.role == 'user' %}"
    "{{- '<|start|>user<|message|>' + message.content + '<|end|>' }}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start|>assistant' }}{%- endif %}"
)
# Magistral's: [INST] turns; [THINK] / [/THINK] are tokens of the vocabulary, not in the template.
MAGISTRAL_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}{%- if message.role == 'user' %}"
    "{{- '[INST]' + message.content + '[/INST]' }}{%- endif %}{%- endfor %}"
)

THINK = ("<think>", "</think>")
QWEN = ("<|im_start|>", "<|im_end|>", *THINK)
HARMONY = ("<|start|>", "<|end|>", "<|message|>", "<|channel|>")
MAGISTRAL = ("[INST]", "[/INST]", "[THINK]", "[/THINK]")
EXAONE = ("<thought>", "</thought>")


def tiny_tokenizer(template: str | None, markers: tuple[str, ...] = THINK):
    """A byte-level tokenizer without merges (one token per byte) whose markers are single added tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tok.add_tokens(list(markers))
    tok.chat_template = template
    return tok


def as_tokens(tok, text: str) -> list[str]:
    """The text as a Trace holds it: one decoded string per token."""
    return [tok.decode([i]) for i in tok(text, add_special_tokens=False)["input_ids"]]


QUESTION = "Tom has 7 apples. Tom buys 5 more. How many apples does Tom have?"


def test_r1_chat_prompt_opens_the_span_and_the_output_splits_inside_it():
    tok = tiny_tokenizer(R1_TEMPLATE)
    fmt = format_for("org/r1-distill", "chat", tokenizer=tok)
    assert fmt.name == "chat" and fmt.span == SPANS["think"]
    prompt = fmt.render(QUESTION, tok)
    assert prompt == f"<s><｜User｜>{QUESTION}\n{R1_INSTRUCTION}<｜Assistant｜><think>\n"
    assert fmt.opens_span(prompt)
    out = "Okay, 7 + 5 = 12. Wait, 12.\n</think>\n\nThe answer is \\boxed{12}."
    reasoning, answer = fmt.split(out, prompt).parts(out)
    assert reasoning == "Okay, 7 + 5 = 12. Wait, 12.\n" and answer == "\n\nThe answer is \\boxed{12}."
    tokens = as_tokens(tok, out)
    split = fmt.split(tokens, prompt)
    assert split.closed and "".join(split.parts(tokens)[0]) == reasoning
    assert "".join(split.parts(tokens)[1]) == answer
    assert tokens[split.reasoning.stop] == "</think>" and split.answer.start == split.reasoning.stop + 1
    assert fmt.lynx_exit == "</think>\n\nFinal Answer: \\boxed{"
    assert (fmt.ttts_cue, fmt.ttts_tokens) == (" Final Answer within \\boxed{}:", 16)


def test_output_that_stops_while_reasoning_is_all_reasoning():
    out = "Okay, 7 + 5 = 12. Hmm, then"
    split = split_thinking(out, SPANS["think"], opened=True)
    assert split.parts(out) == (out, "") and not split.closed


def test_a_close_without_an_open_means_the_output_began_in_the_span():
    out = "7 + 5 = 12.\n</think>\n\n\\boxed{12}"  # R1 prompted without its template
    assert split_thinking(out, SPANS["think"]).parts(out) == ("7 + 5 = 12.\n", "\n\n\\boxed{12}")


def test_qwen3_thinking_on_and_off():
    tok = tiny_tokenizer(QWEN3_TEMPLATE, QWEN)
    on = format_for("org/qwen3", "chat", tokenizer=tok, template_kwargs=(("enable_thinking", True),))
    prompt = on.render(QUESTION, tok)
    assert prompt.endswith("<|im_start|>assistant\n") and not on.opens_span(prompt)
    out = "<think>\nHmm, 7 + 5 = 12.\n</think>\n\n\\boxed{12}"
    assert on.split(out, prompt).parts(out) == ("\nHmm, 7 + 5 = 12.\n", "\n\n\\boxed{12}")
    tokens = as_tokens(tok, out)
    split = on.split(tokens, prompt)
    assert tokens[split.reasoning.start - 1] == "<think>" and "".join(split.parts(tokens)[1]) == "\n\n\\boxed{12}"
    off = format_for("org/qwen3", "chat", tokenizer=tok, template_kwargs=(("enable_thinking", False),))
    prompt = off.render(QUESTION, tok)
    assert prompt.endswith("<think>\n\n</think>\n\n") and not off.opens_span(prompt)
    assert off.split("\\boxed{12}", prompt).parts("\\boxed{12}") == ("", "\\boxed{12}")


def test_harmony_channels():
    tok = tiny_tokenizer(HARMONY_TEMPLATE, HARMONY)
    fmt = format_for("org/gpt-oss", "chat", tokenizer=tok, template_kwargs=(("reasoning_effort", "low"),))
    assert fmt.span == SPANS["harmony"]
    prompt = fmt.render(QUESTION, tok)
    assert "Reasoning: low" in prompt and prompt.endswith("<|start|>assistant") and not fmt.opens_span(prompt)
    out = ("<|channel|>analysis<|message|>7 + 5 = 12.<|end|>"
           "<|start|>assistant<|channel|>final<|message|>\\boxed{12}")
    assert fmt.split(out, prompt).parts(out) == ("7 + 5 = 12.", "\\boxed{12}")
    tokens = as_tokens(tok, out)
    reasoning, answer = fmt.split(tokens, prompt).parts(tokens)
    assert "".join(reasoning) == "7 + 5 = 12." and "".join(answer) == "\\boxed{12}"
    assert fmt.lynx_exit == "<|end|><|start|>assistant<|channel|>final<|message|>Final Answer: \\boxed{"


@pytest.mark.parametrize("family,opener,closer", [("magistral", "[THINK]", "[/THINK]"),
                                                   ("exaone", "<thought>", "</thought>")])
def test_magistral_and_exaone_spans(family, opener, closer):
    magistral = family == "magistral"
    tok = tiny_tokenizer(MAGISTRAL_TEMPLATE if magistral else None, MAGISTRAL if magistral else EXAONE)
    assert detect_span(tok) == SPANS[family]
    out = f"{opener}7 + 5 = 12. Wait, yes.{closer}The answer is 12."
    split = split_thinking(as_tokens(tok, out), SPANS[family])
    reasoning, answer = split.parts(as_tokens(tok, out))
    assert "".join(reasoning) == "7 + 5 = 12. Wait, yes." and "".join(answer) == "The answer is 12."
    assert PromptFormat("chat", span=SPANS[family]).lynx_exit == f"{closer}\n\nFinal Answer: \\boxed{{"


def test_template_markers_win_over_spare_vocabulary_tokens():
    tok = tiny_tokenizer(R1_TEMPLATE, THINK + HARMONY)
    assert detect_span(tok) == SPANS["think"] and detect_span(tiny_tokenizer(None, ())) is None


def test_prompt_opens_span_reads_the_last_marker():
    assert prompt_opens_span("a <think> b </think> c <think>\n", SPANS["think"])
    assert not prompt_opens_span("a <think> b </think>", SPANS["think"])
    assert not prompt_opens_span("no span", SPANS["think"]) and not prompt_opens_span("x", None)


def test_auto_picks_zoo_style_then_chat_then_plain():
    from thinklens.tasks import generate_problems, render_prompt

    think = format_for("tiny-think")
    assert think.name == "think" and think.lynx_exit == "</think> ####"
    assert (format_for("tiny-cot").ttts_cue, format_for("tiny-cot").ttts_tokens) == (" ####", 8)
    p = generate_problems(1, seed=0)[0]
    assert think.render(p) == render_prompt(p, "think")
    assert format_for("org/chat-model", tokenizer=tiny_tokenizer(R1_TEMPLATE)).name == "chat"
    plain = format_for("org/base-model", tokenizer=tiny_tokenizer(None))
    assert plain.name == "plain" and plain.render(p) == p.question and plain.span == SPANS["think"]


def test_zoo_think_and_cot_traces_split_on_their_markers():
    think, cot = format_for("tiny-think"), format_for("tiny-cot")
    prompt = "Tom has 7 apples . How many apples does Tom have ? <think>"
    tokens = ["hmm", "<<", "7", "+", "5", "=", "12", ">>", "</think>", "so", "####", "12"]
    assert think.split(tokens, prompt).parts(tokens) == (tokens[:8], tokens[9:])
    assert cot.split(tokens[1:8] + ["####", "12"], "q steps :").parts(tokens[1:8] + ["####", "12"]) == (tokens[1:8], ["12"])


def test_bad_format_and_chat_without_template_are_clear_errors():
    with pytest.raises(ThinklensError, match="did you mean 'chat'"):
        format_for("org/m", "chta", tokenizer=tiny_tokenizer(None))
    with pytest.raises(ThinklensError, match="chat template"):
        format_for("org/m", "chat", tokenizer=tiny_tokenizer(None)).render(QUESTION, tiny_tokenizer(None))
    with pytest.raises(ThinklensError, match="token strings"):
        split_thinking([1, 2], SPANS["think"])
