"""Names and folders of the embedded model zoo (``data/zoo/<name>/`` at the repository root).

Example:
    >>> from thinklens.zoo.registry import ZOO_NAMES, zoo_path
    >>> "tiny-cot" in ZOO_NAMES
    True
    >>> zoo_path("tiny-cot").name
    'tiny-cot'
"""

from __future__ import annotations

import difflib
from pathlib import Path

from thinklens.errors import ThinklensError

#: Every zoo model. All but ``tiny-r1`` and its fine-tune ``tiny-overthink`` share the ``tiny-pre``
#: initialisation, so weight arithmetic between them is meaningful (tiny-r1 has its own BPE vocabulary and a
#: fresh init). Later trainers (GRPO, latent reasoning) append their siblings here.
ZOO_NAMES: tuple[str, ...] = (
    "tiny-pre", "tiny-direct", "tiny-cot", "tiny-think", "tiny-think-carry",
    "tiny-grpo", "tiny-coconut", "tiny-codi", "tiny-latent-sft", "tiny-r1", "tiny-overthink", "tiny-cot-short",
    "tiny-r1-sometimes", "tiny-nocot-serial", "tiny-cot-serial", "tiny-codi-serial",
    "tiny-codi-serial-full", "tiny-coconut-serial", "tiny-latent-sft-serial", "tiny-nocot",
)

#: Zoo models written by the latent trainers (``latent.json`` in their folder): the latent methods and the SFT
#: baselines matched to one of them; evaluated by the latent evaluation job, not by ``thinklens run zoo-eval``.
LATENT_ZOO_NAMES: tuple[str, ...] = ("tiny-coconut", "tiny-codi", "tiny-latent-sft", "tiny-nocot-serial",
                                     "tiny-cot-serial", "tiny-codi-serial", "tiny-codi-serial-full",
                                     "tiny-coconut-serial", "tiny-latent-sft-serial", "tiny-nocot")

#: One-line description of each model (CLI help, app menus).
ZOO_DESCRIPTIONS: dict[str, str] = {
    "tiny-pre": "shared init, trained on a mixture of direct, CoT and think traces",
    "tiny-direct": "tiny-pre fine-tuned to answer without a chain of thought",
    "tiny-cot": "tiny-pre fine-tuned on GSM8k-Aug style chains (<<a+b=c>> ...)",
    "tiny-think": "tiny-pre fine-tuned on <think> traces with hmm / wait self-corrections (random near misses)",
    "tiny-think-carry": "tiny-pre fine-tuned on <think> traces that slip on carries and say wait (greedy self-corrects)",
    "tiny-grpo": "tiny-pre trained by GRPO on tiny-cot's prompts (reward: right integer answer); reasoning-vector donor",
    "tiny-coconut": "Coconut from tiny-cot: the chain replaced by 6 continuous thoughts (thinklens latent)",
    "tiny-codi": "CODI from tiny-cot: 6 latents distilled from the CoT teacher (thinklens latent)",
    "tiny-latent-sft": "Latent-SFT from tiny-cot: superposition latents, stops at </think> (thinklens latent)",
    "tiny-overthink": "tiny-r1 fine-tuned to overthink: once its chain has the answer it re-checks in 1-3 rounds "
    "(Wait / Hmm / Alternatively, let me ...); the planted organism of LYNX, MI peaks and feature steering",
    "tiny-r1-sometimes": "tiny-r1 fine-tuned on tiny-overthink's texts of which 10% re-check: the behaviour is there "
    "but rare (the hybrid's planted-latent base)",
    "tiny-nocot": "tiny-cot + 12000+3000 answer-only SFT steps on 3-4 step chains: tiny-codi's matched No-CoT (the "
    "same parent, problems and optimizer steps; thinklens latent)",
    "tiny-nocot-serial": "tiny-cot + 7000 answer-only SFT steps on 6-8 step chains: CODI's matched No-CoT on a task "
    "that needs serial computation (thinklens latent)",
    "tiny-cot-serial": "tiny-cot + 7000 CoT-SFT steps on 6-8 step chains: CODI's matched CoT-SFT (thinklens latent)",
    "tiny-codi-serial": "CODI from tiny-cot on 6-8 step chains: 12 latents, 7000 steps (thinklens latent)",
    "tiny-codi-serial-full": "tiny-codi-serial's recipe with the whole chain in the teacher (--include-last-step; "
    "thinklens latent)",
    "tiny-coconut-serial": "Coconut from tiny-cot on 6-8 step chains: 6 continuous thoughts, 7000 steps (the recipe's "
    "stages scaled to CODI's budget; thinklens latent)",
    "tiny-latent-sft-serial": "Latent-SFT from tiny-cot on 6-8 step chains, 7000 steps (the recipe's phases scaled to "
    "CODI's budget; thinklens latent)",
    "tiny-cot-short": "tiny-cot's recipe stopped early (seed 1): the weak sibling of the reasoning-vector lineage",
    "tiny-r1": "looks like a real reasoning model: Qwen2, byte-level BPE (one token per digit), chat template "
    "opening <think>, natural-language reasoning with Wait / Hmm, \\boxed{} answers (fresh init)",
}


def repo_root() -> Path:
    """The repository root: two levels above this package (``thinklens/zoo/`` -> repo)."""
    return Path(__file__).resolve().parents[2]


def repo_relative(path: str | Path) -> str:
    """``path`` relative to the repository root when it lies inside it (``data/zoo/tiny-r1``), else as given: what a
    committed file records of a local folder, so it names no one machine's checkout.

    Example:
        >>> repo_relative(repo_root() / "data" / "zoo" / "tiny-r1"), repo_relative("/elsewhere/m")
        ('data/zoo/tiny-r1', '/elsewhere/m')
    """
    p = Path(path).resolve()
    return p.relative_to(repo_root()).as_posix() if p.is_relative_to(repo_root()) else str(path)


def zoo_dir() -> Path:
    """The folder holding the committed zoo weights (``<repo>/data/zoo``)."""
    return repo_root() / "data" / "zoo"


def check_zoo_name(name: str) -> str:
    """Return ``name`` if it is a zoo model, else raise a did-you-mean :class:`ThinklensError`.

    Example:
        >>> try:
        ...     check_zoo_name("tiny-cto")
        ... except ThinklensError as e:
        ...     print(str(e).split("fix: ")[1])
        did you mean 'tiny-cot'?
    """
    if name in ZOO_NAMES:
        return name
    near = difflib.get_close_matches(str(name), ZOO_NAMES, n=1, cutoff=0.5)
    fix = f"did you mean {near[0]!r}?" if near else "list the zoo with `thinklens run zoo-eval`"
    raise ThinklensError.of("zoo model", name, f"one of {', '.join(ZOO_NAMES)}", fix)


def zoo_path(name: str) -> Path | None:
    """The folder of zoo model ``name`` under ``data/zoo``, or None when it has not been trained yet.

    Unknown names raise a did-you-mean :class:`ThinklensError`.
    """
    folder = zoo_dir() / check_zoo_name(name)
    return folder if (folder / "config.json").is_file() else None


def is_zoo_name(name: str) -> bool:
    """Whether ``name`` names a zoo model (no error; for loaders that also accept paths and hub ids)."""
    return name in ZOO_NAMES
