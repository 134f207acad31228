"""Small real runs of the jobs whose results the app draws for real weights (issue 55), on the zoo's models so that
they take seconds: a ``steer-vector`` sweep, an ``organism-eval`` of tiny-r1 against tiny-overthink (thinking traces
with their ground truth), a quick ``validate --model`` of the induction and readout controls and one of thinklens's SAE
against SAELens's. On the zoo the effects are absent (no sentiment to move, no induction heads in a 4-layer arithmetic
model; the SAEs, though, do match): these runs check that every picture draws from what the jobs write, not what it
shows on real weights."""

from __future__ import annotations

from pathlib import Path

import pytest

ZOO = ("tiny-think", "tiny-r1", "tiny-overthink")


def need_zoo() -> None:
    from thinklens.zoo.registry import zoo_path

    missing = [m for m in ZOO if zoo_path(m) is None]
    if missing:
        pytest.skip(f"the zoo is not trained ({', '.join(missing)})")


def steer_vector_run(root: Path, run_id: str = "sv") -> Path:
    """A steer-vector sweep at c = -0.2, 0, 0.2 on 4 prompts."""
    from thinklens.runs.runner import run_job

    run_job("steer-vector", model="tiny-think", pair=(" yes", " no"), site="resid_post.1", n_prompts=4, samples=1,
            max_new_tokens=8, coeffs=(-0.2, 0.0, 0.2), runs=root, run_id=run_id, progress=False, threads=1)
    return root / "steer-vector" / run_id


def organism_eval_run(root: Path, run_id: str = "org") -> Path:
    """tiny-r1 against tiny-overthink on 2 one-step problems: their thinking traces with answer_known_at and cues."""
    from thinklens.runs.runner import run_job

    run_job("organism-eval", model="tiny-r1", models=("tiny-overthink",), n_eval=2, step_counts=(1,), runs=root,
            run_id=run_id, progress=False, threads=1)
    return root / "organism-eval" / run_id


def validate_controls_run(root: Path, run_id: str = "controls") -> Path:
    """``validate --model tiny-think --methods induction,readout --quick``."""
    from thinklens.runs.runner import run_job

    run_job("validate", model="tiny-think", methods=("induction", "readout"), quick=True, runs=root, run_id=run_id,
            progress=False, threads=1)
    return root / "validate" / run_id


def validate_sae_run(root: Path, run_id: str = "sae") -> Path:
    """``validate --model tiny-think --methods sae-real --quick``: thinklens's SAE and SAELens's trained on the same
    activations and scored on the same held-out texts (the run keeps both SAEs; about half a minute)."""
    from thinklens.runs.runner import run_job

    run_job("validate", model="tiny-think", methods=("sae-real",), quick=True, runs=root, run_id=run_id, progress=False,
            threads=1)
    return root / "validate" / run_id
