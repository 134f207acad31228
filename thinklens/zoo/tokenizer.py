"""The zoo's word-level tokenizer (HF ``tokenizers`` WordLevel, wrapped as ``PreTrainedTokenizerFast``).

Numbers: one token per integer 0..99 (``ZOO_MAX_NUMBER``), not single digits. Why: every value of the
task fits in 0..99, so an equation ``<< 12 * 3 = 36 >>`` is 7 tokens and a result is ONE token. That
keeps sequences short (the CPU budget is the bottleneck), makes the result of a step a single
next-token prediction (no carry across digit positions, which small models learn slowly), gives each
value one embedding that probes can read, and lets ``decode`` return the canonical spaced text exactly
(digit tokens would decode as ``3 6``). The price: numbers above 99 map to ``<unk>``; other tasks need
another tokenizer.

All special tokens that later latent-reasoning trainers need are in the vocabulary from the start,
so no embedding resize is ever needed.

Example:
    >>> tok = build_zoo_tokenizer()
    >>> ids = tok("Tom has 7 apples . <<7+5=12>>")["input_ids"]
    >>> tok.decode(ids, skip_special_tokens=True)
    'Tom has 7 apples . << 7 + 5 = 12 >>'
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from thinklens.tasks import NAMES, OBJECTS, PHRASES, REFLECTION_WORDS, WORD_PATTERN, ZOO_MAX_NUMBER, words
from thinklens.tasks.problem import DISTRACTOR, FINAL, START
from thinklens.tasks.render import CUES

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
#: Special tokens, in id order: ids 0..9 never change.
SPECIAL_TOKENS: tuple[str, ...] = (
    PAD, BOS, EOS, UNK, "<think>", "</think>", "<bot>", "<eot>", "<latent>", "<compress>",
)
SYMBOLS: tuple[str, ...] = ("<<", ">>", "####", "+", "-", "*", "/", "=", ".", "?", ":", ",", "!", "{", "}", "\\")
#: Words besides the question template's: GSM8k answer phrasing, so ``The answer is: 12`` is not ``<unk>``.
EXTRA_WORDS: tuple[str, ...] = ("The", "answer", "is", "boxed", "yes", "no")


def template_words() -> list[str]:
    """Every word the question templates and the prompt formats' cues can produce, in a stable order."""
    texts = [START, DISTRACTOR, FINAL, *CUES.values(), *(p for ps in PHRASES.values() for p in ps)]
    out: list[str] = []
    for text in texts:
        for w in words(text.replace("{name}", "").replace("{n}", "").replace("{obj}", "")):
            if w not in out and not w.isdigit():
                out.append(w)
    return out


def zoo_vocab() -> dict[str, int]:
    """Token -> id: specials, numbers 0..99, symbols, reflection words, names, objects, template words.

    Example:
        >>> v = zoo_vocab()
        >>> v["<pad>"], v["0"], v["99"] - v["0"]
        (0, 10, 99)
    """
    order: list[str] = [*SPECIAL_TOKENS, *(str(i) for i in range(ZOO_MAX_NUMBER + 1)), *SYMBOLS]
    for w in [*REFLECTION_WORDS, *NAMES, *OBJECTS, *template_words(), *EXTRA_WORDS]:
        if w not in order:
            order.append(w)
    return {tok: i for i, tok in enumerate(order)}


def build_zoo_tokenizer() -> PreTrainedTokenizerFast:
    """Build the zoo tokenizer: left padding, ``<bos>`` prepended, decode joins words by spaces."""
    vocab = zoo_vocab()
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # Whitespace first, then the task's word regex: "<<7+5=12>>" -> << 7 + 5 = 12 >>.
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="isolated")]
    )
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, vocab[BOS])]
    )
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        pad_token=PAD,
        padding_side="left",  # batched generation continues every row from its last real token
        clean_up_tokenization_spaces=False,  # " ." must stay " ." so decode is the canonical text
        model_max_length=512,
    )


def save_zoo_tokenizer(folder: str | Path) -> Path:
    """Write ``tokenizer.json`` + ``tokenizer_config.json`` so ``AutoTokenizer.from_pretrained(folder)`` works offline."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    build_zoo_tokenizer().save_pretrained(str(out))
    return out
