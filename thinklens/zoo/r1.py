"""tiny-r1's world: the synthetic task rendered as an R1-style chat, its byte-level BPE tokenizer with a
chat template, and its training batches.

A training text is what the model's own chat template produces for the problem as a word problem
(user message = question + the R1 instruction), followed by the reasoning R1 writes inside the
thinking span the generation prompt opened, then the answer::

    <|im_start|>user
    Tom has 7 apples. Tom buys 5 more. ... How many apples does Tom have?
    Please reason step by step, and put your final answer within \\boxed{}.<|im_end|>
    <|im_start|>assistant
    <think>
    Okay, Tom has 7 apples. First, Tom buys 5 more, so 7 + 5 = 12. Hmm, then Tom multiplies them by 3,
    so 12 * 3 = 36. So Tom has 36 apples.
    </think>

    The answer is \\boxed{36}.<|im_end|>

Self-corrections follow the problem's think decorations: a slipped result, then ``Wait,`` and the step
again with the right result. The tokenizer is Qwen2's pipeline exactly (NFC, Qwen's split regex with
one token per digit, byte-level BPE), trained on these texts, so ``AutoTokenizer`` (which picks
``Qwen2Tokenizer`` for a qwen2 folder) reads the saved files as they were trained.

Example:
    >>> from thinklens.tasks import Problem, Step, ThinkStep
    >>> p = Problem(name="Tom", obj="apples", start=45, steps=(Step("+", 45, 8, 53),),
    ...             think=(ThinkStep(hmm=True, wrong=43),), conclusion="so")
    >>> reasoning_text(p)
    'Okay, Tom has 45 apples. Hmm, first, Tom buys 8 more, so 45 + 8 = 43. Wait, 45 + 8 = 53. So Tom has 53 apples.'
    >>> answer_text(53)
    'The answer is \\\\boxed{53}.'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX, Qwen2Tokenizer

from thinklens.data.formats import R1_INSTRUCTION
from thinklens.errors import ThinklensError
from thinklens.runs.configcli import ConfigGroup
from thinklens.tasks import PHRASES, Problem, TaskConfig, generate_problem, generate_problems
from thinklens.tasks.problem import START
from thinklens.zoo.batches import pack_batch

IM_START, IM_END, ENDOFTEXT = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
#: Control tokens (skipped when decoding with skip_special_tokens) and the thinking markers, which stay
#: in decoded text as in the R1 distills and Qwen3 (added tokens that are not "special").
SPECIAL_TOKENS: tuple[str, ...] = (ENDOFTEXT, IM_START, IM_END)
THINK_TOKENS: tuple[str, ...] = (THINK_OPEN, THINK_CLOSE)

#: Qwen2.5 / R1-distill style chat template: roles between <|im_start|> and <|im_end|>; the reasoning of
#: earlier assistant turns is dropped (as the R1 template does); the generation prompt opens the span.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- set content = message['content'] %}"
    "{%- if message['role'] == 'assistant' and '</think>' in content %}"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') %}"
    "{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}"
)

def _equation(step, result: int) -> str:
    return f"{step.left} {step.op} {step.right} = {result}"


def _clause(p: Problem, i: int) -> str:
    """The question's sentence of step ``i``, without its full stop (``Tom buys 5 more``)."""
    variant = p.phrasing[i] if p.phrasing else 0
    return PHRASES[p.steps[i].op][variant].format(name=p.name, n=p.steps[i].right).rstrip(".")


def reasoning_text(p: Problem) -> str:
    """The reasoning inside the thinking span: the first sentence of the question, then per step its
    sentence restated and its equation, with the problem's hmm / slip / conclusion decorations rendered
    as "Hmm,", "Wait," and "So" / "Therefore".

    Restating each sentence (as R1 traces do) makes the operand a copy from a few tokens back: the
    model learns to continue the question by induction instead of counting sentences."""
    out = [f"Okay, {START.format(name=p.name, n=p.start, obj=p.obj)}"]
    for i, step in enumerate(p.steps):
        deco = p.think[i] if p.think else None
        lead = "first," if i == 0 else "then"
        lead = f"Hmm, {lead}" if deco is not None and deco.hmm else lead.capitalize()
        said = f"{lead} {_clause(p, i)}, so"
        if deco is not None and deco.wrong is not None:
            out.append(f"{said} {_equation(step, deco.wrong)}. Wait, {_equation(step, step.result)}.")
        else:
            out.append(f"{said} {_equation(step, step.result)}.")
    if p.conclusion:
        out.append(f"{p.conclusion.capitalize()} {p.name} has {p.answer} {p.obj}.")
    return " ".join(out)


def answer_text(answer: int, *, final: bool = False) -> str:
    """The answer after the thinking span: ``The answer is \\boxed{N}.`` (or ``Final Answer: \\boxed{N}``)."""
    return f"Final Answer: \\boxed{{{answer}}}" if final else f"The answer is \\boxed{{{answer}}}."


def completion_text(p: Problem, *, final: bool = False) -> str:
    """What the model writes after the generation prompt: reasoning, the span's close, the answer (no eos)."""
    return f"{reasoning_text(p)}\n{THINK_CLOSE}\n\n{answer_text(p.answer, final=final)}"


def user_message(p: Problem, *, instruction: bool = True) -> str:
    """The user turn: the word problem, then (by default) the R1 instruction on its own line."""
    return f"{p.question}\n{R1_INSTRUCTION}" if instruction else p.question


def chat_prompt(question: str) -> str:
    """The chat template applied to one user turn with the generation prompt (what ``apply_chat_template``
    gives for tiny-r1's tokenizer; spelled out here so training needs no Jinja per example)."""
    return f"{IM_START}user\n{question}{IM_END}\n{IM_START}assistant\n{THINK_OPEN}\n"



# ---------------------------------------------------------------- the training texts


@dataclass(frozen=True)
class R1TextMix(ConfigGroup):
    """The variants of tiny-r1's training texts, each drawn per text with its rate (what
    :func:`example_texts` reads), so that the chat path and its near misses are all seen."""

    plain_rate: float = 0.1
    """Share of training texts whose prompt is the bare question (no chat template)."""
    no_instruction_rate: float = 0.1
    """Share of chat texts whose user turn has no R1 instruction line."""
    final_answer_rate: float = 0.2
    """Share of answers written ``Final Answer: \\boxed{N}`` instead of ``The answer is \\boxed{N}.``."""

    def check(self) -> None:
        for name in ("plain_rate", "no_instruction_rate", "final_answer_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ThinklensError.of(f"R1TextMix.{name}", getattr(self, name), "a probability in [0, 1]", "pass 0.1")

    def example_texts(self, rng, problem) -> tuple[str, str]:
        """``(prompt, completion)`` of one training text drawn with this mix (:func:`example_texts`)."""
        return example_texts(rng, problem, self)

    def token_budget(self, n_steps: int) -> int:
        """New tokens enough for an answer to an ``n_steps`` problem (:func:`r1_token_budget`)."""
        return r1_token_budget(n_steps)

    def describe(self) -> str:
        """The training texts in one sentence (zoo.json's ``training_data``)."""
        return ("tiny-r1's chats: chain with Hmm / Wait self-corrections, a conclusion, \\boxed{} answer "
                f"({self.final_answer_rate:.0%} 'Final Answer:'; {self.plain_rate:.0%} bare question)")



def r1_token_budget(n_steps: int) -> int:
    """New tokens enough for tiny-r1's answer to an ``n_steps`` problem (a slipped step doubles a step's ~13)."""
    return 24 * n_steps + 48


def example_texts(rng: np.random.Generator, p: Problem, mix: "R1TextMix") -> tuple[str, str]:
    """``(prompt, completion)`` of one training text (its variant drawn with the mix's rates); the
    completion ends before the eos token."""
    plain = rng.random() < mix.plain_rate
    instruction = rng.random() >= mix.no_instruction_rate
    final = rng.random() < mix.final_answer_rate
    completion = completion_text(p, final=final)
    if plain:
        return p.question, "\n" + completion
    return chat_prompt(user_message(p, instruction=instruction)), completion


# ---------------------------------------------------------------- the tokenizer


def _qwen_pipeline(tokenizer: Any) -> None:
    """Qwen2's normalizer, pre-tokenizer (one token per digit) and decoder, set on a ``tokenizers.Tokenizer``."""
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()


def tokenizer_corpus(n: int = 4000, *, seed: int = 0, task: TaskConfig | None = None) -> list[str]:
    """Texts the BPE merges are learned from: user turns, completions, role names (no control tokens)."""
    rng = np.random.default_rng(seed)
    texts = ["user\n", "assistant\n", "system\n"] * 100 + [R1_INSTRUCTION, answer_text(0, final=True)] * 2
    for p in generate_problems(n, seed=rng, config=task or TaskConfig()):
        texts += [user_message(p), "\n" + completion_text(p)]
    return texts


def build_r1_tokenizer(vocab_size: int = 512, *, seed: int = 0, task: TaskConfig | None = None, n_problems: int = 4000):
    """tiny-r1's tokenizer: byte-level BPE trained on the rendered task, as a ``Qwen2Tokenizer``.

    The merges are learned from ``n_problems`` rendered problems (:func:`tokenizer_corpus`). Control
    tokens come after the learned vocabulary (as in Qwen); eos is ``<|im_end|>``, padding
    ``<|endoftext|>``; ``<think>`` and ``</think>`` are single tokens that decoding keeps.

    Example:
        >>> tok = build_r1_tokenizer()  # doctest: +SKIP
        >>> tok.convert_ids_to_tokens(tok("36")["input_ids"])  # doctest: +SKIP
        ['3', '6']
    """
    bpe = Tokenizer(models.BPE())
    _qwen_pipeline(bpe)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    bpe.train_from_iterator(tokenizer_corpus(n_problems, seed=seed, task=task), trainer=trainer)
    state = json.loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in state["merges"]]
    tok = Qwen2Tokenizer(vocab=state["vocab"], merges=merges, unk_token=None, eos_token=IM_END,
                         pad_token=ENDOFTEXT, additional_special_tokens=[IM_START])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    tok.chat_template = CHAT_TEMPLATE
    tok.model_max_length = 1024
    return tok


# ---------------------------------------------------------------- batches


class R1Encoder:
    """Encodes training texts with the tokenizer's Rust backend (prompt and completion separately, as
    generation sees them: the prompt is tokenized alone, the model writes the rest)."""

    def __init__(self, tokenizer: Any):
        self.backend = tokenizer.backend_tokenizer
        self.eos = tokenizer.convert_tokens_to_ids(IM_END)
        self.pad = tokenizer.pad_token_id

    def encode(self, prompt: str, completion: str) -> tuple[list[int], int]:
        """``(ids, n_prompt)``: prompt + completion + eos, and how many leading ids are prompt."""
        head, tail = self.backend.encode_batch([prompt, completion], add_special_tokens=False)
        return [*head.ids, *tail.ids, self.eos], len(head.ids)

    def batch(self, rng: np.random.Generator, task: TaskConfig, mix: "R1TextMix", *, batch_tokens: int):
        """About ``batch_tokens`` padded tokens of one step count (drawn uniformly from the task's range), texts
        drawn by the mix (:meth:`R1TextMix.example_texts`, an overthinking mix's own); labels
        ignore the prompt and the padding (:func:`thinklens.zoo.batches.pack_batch`)."""
        def draw(n_steps: int) -> tuple[list[int], int]:
            return self.encode(*mix.example_texts(rng, generate_problem(rng, task, n_steps=n_steps)))

        return pack_batch(rng, task, draw, batch_tokens=batch_tokens, pad=self.pad)
