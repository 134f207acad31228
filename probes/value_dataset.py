"""States at every word of a teacher-forced reasoning text, with the task's ground truth per word.

The data of the probe job's ``intermediate`` target: ``thinklens.tasks`` renders each problem's
reasoning text with the running intermediate value known at every word; this module finds each
word's last token and captures the model's states there (one batched forward per ``batch_size``
texts, left padding undone).

Example:
    >>> # ds = value_dataset(model, generate_problems(50, seed=0), "think", ["resid_post.1"])
    >>> # RidgeProbe().fit(ds["features"]["resid_post.1"], ds["running"])
"""

from __future__ import annotations

import numpy as np

from thinklens.engine.sites import parse_sites
from thinklens.errors import ThinklensError
from thinklens.runs.stages import batch_ranges
from thinklens.tasks import align_target, render_example


def word_token_index(tokenizer, text: str, word_ends: list[int]) -> list[int]:
    """Index of the token holding the last character of each word (char end offsets given)."""
    try:
        offsets = tokenizer(text, return_offsets_mapping=True)["offset_mapping"]
    except (NotImplementedError, TypeError, KeyError):
        raise ThinklensError.of("tokenizer", type(tokenizer).__name__, "a fast tokenizer (offset mappings)",
                                "load the model's tokenizer.json (PreTrainedTokenizerFast)") from None
    out = []
    for end in word_ends:
        hit = [t for t, (a, b) in enumerate(offsets) if a < end <= b and b > a]
        if not hit:
            raise ThinklensError.of("alignment", text[:60], "every word covered by a token", "check the tokenizer")
        out.append(hit[-1])
    return out


def value_dataset(model, problems, style: str, sites, *, exclude_value_tokens: bool = True,
                  batch_size: int = 32) -> dict:
    """States at every target word of the teacher-forced ``style`` text, with per-word ground truth.

    Returns ``{"features": {site: float32 [row, d]}, "running": int [row], "next": int [row],
    "group": int [row] (problem index), "position": int [row] (token index in the problem's text),
    "word": list[str], "kind": list[str], "texts": list[str]}``; ``running`` is the value known at
    the word, ``next`` the result of the step being worked on.

    Example:
        >>> # ds = value_dataset(model, generate_problems(50, seed=0), "think", ["resid_post.1"])
        >>> # RidgeProbe().fit(ds["features"]["resid_post.1"], ds["running"])
    """
    site_list = parse_sites(list(sites), n_layers=model.n_layers)
    texts, cols, rows = [], [], []
    for i, p in enumerate(problems):
        prompt, target = render_example(p, style)
        al = align_target(p, style)
        text = f"{prompt} {target}"
        ends, pos = [], len(prompt) + 1
        for w in al.words:
            ends.append(pos + len(w))
            pos += len(w) + 1
        tok_idx = word_token_index(model.tokenizer, text, ends)
        keep = [j for j, w in enumerate(al.words) if not (exclude_value_tokens and w == str(al.running[j]))]
        texts.append(text)
        cols.append([tok_idx[j] for j in keep])
        rows += [(i, al.running[j], al.target[j], al.kind[j], tok_idx[j], al.words[j]) for j in keep]
    feats: dict[str, list[np.ndarray]] = {str(s): [] for s in site_list}
    for part in batch_ranges(len(texts), batch_size):
        batch = model.capture([texts[i] for i in part], site_list)
        lengths = batch.attention_mask.sum(1).tolist()
        width = batch.attention_mask.shape[1]
        for b, i in enumerate(part):
            index = [width - int(lengths[b]) + c for c in cols[i]]  # left padding
            for s in site_list:
                feats[str(s)].append(batch.acts[s][b, index].float().cpu().numpy())
    return {"features": {k: np.concatenate(v, axis=0) for k, v in feats.items()},
            "running": np.array([r[1] for r in rows], dtype=np.int64),
            "next": np.array([r[2] for r in rows], dtype=np.int64),
            "group": np.array([r[0] for r in rows], dtype=np.int64),
            "position": np.array([r[4] for r in rows], dtype=np.int64),
            "word": [r[5] for r in rows], "kind": [r[3] for r in rows], "texts": texts}
