"""Fixtures and tolerances of the GPU tier (``pytest -m gpu tests/gpu``, ``make test-gpu``); import them into a test module.

Not a conftest.py: on a machine without the dev extras (the device machine has no beartype for the root
conftest's shape checks) the tier runs with ``--noconftest``, so each module marks and skips itself
(:data:`GPU`) and takes its fixtures from here. ``THINKLENS_TEST_DEVICE`` (default ``cuda``) names the
device; ``THINKLENS_TEST_DEVICE=cpu pytest --noconftest -m gpu tests/gpu`` runs the tier's logic on a CPU.

Tolerances, by what is compared:
  * the same dtype on the same device (our capture against HF ``output_hidden_states``, an intervention against
    its oracle): the same kernels on the same inputs give the same bits; :func:`same_dtype_atol` allows two units
    in the last place at the tensor's scale, for a library that picks another reduction order between two calls
    (a wrong module path is off by the scale itself).
  * a dtype against float32 weights on the CPU: :data:`CROSS_REL`, a relative Frobenius error over the real
    tokens. bf16 keeps 8 significant bits and float16 11 (unit roundoff 2^-9 and 2^-12); each matmul and
    norm rounds its output and the errors add up over the blocks. On CPU the zoo and the tiny families
    measure at most 1e-2 (bf16) and 1e-3 (float16); CUDA accumulates matmuls in float32 as the CPU does.
    float32 on CUDA: IEEE matmuls (PyTorch leaves TF32 off for matmuls by default), 1e-4 for the
    different summation orders of two BLAS libraries.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

DEVICE = os.environ.get("THINKLENS_TEST_DEVICE", "cuda")
"""The accelerator under test."""

GPU = [pytest.mark.gpu,
       pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(), reason="needs a CUDA device")]
"""``pytestmark`` of every GPU-tier module: the marker, and a skip where the device is missing (also without conftest)."""

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
CROSS_REL = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 4e-3}
"""Relative Frobenius error allowed against float32 weights on the CPU (see the module docstring)."""
TINY = ("llama", "qwen2", "gpt2", "gemma")
"""Tiny random families the tier loads (``tools.testing.FAMILIES``)."""
ZOO = "tiny-think"
"""The trained zoo model the tier loads (skipped while it is not trained)."""

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def same_dtype_atol(ref: torch.Tensor, dtype: torch.dtype | None = None) -> float:
    """Two units in the last place of ``dtype`` (default ``ref``'s) at ``ref``'s largest magnitude."""
    return 2 * torch.finfo(dtype or ref.dtype).eps * float(ref.detach().abs().max())


def module_hooks(model: torch.nn.Module) -> dict[str, tuple[tuple, tuple]]:
    """The forward (pre-)hooks of each module that has some: what an intervention could leave behind."""
    return {n: (tuple(m._forward_hooks), tuple(m._forward_pre_hooks)) for n, m in model.named_modules()
            if m._forward_hooks or m._forward_pre_hooks}


def rel_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius error, in float64 on the CPU."""
    g, r = got.detach().double().cpu(), ref.detach().double().cpu()
    return float((g - r).norm() / r.norm().clamp_min(1e-300))


def zoo_prompts(n: int = 4, seed: int = 1, style: str = "think") -> list[str]:
    """Prompts of the zoo's task."""
    from thinklens.tasks import generate_problems, render_prompt

    return [render_prompt(p, style) for p in generate_problems(n, seed=seed)]


def prompts_for(name: str) -> list[str]:
    """Left-padded prompts that suit model ``name`` (word prompts for the tiny families, task prompts for the zoo)."""
    from tools.testing import CHECK_PROMPTS

    return zoo_prompts() if name == ZOO else list(CHECK_PROMPTS)


@pytest.fixture(scope="session")
def gpu_dirs(tmp_path_factory) -> dict[str, Path]:
    """One saved tiny random model per family of :data:`TINY`, plus ``zooish``: a tiny llama with the zoo tokenizer."""
    from thinklens.zoo.tokenizer import save_zoo_tokenizer, zoo_vocab
    from tools.testing import build_tiny_model

    root = tmp_path_factory.mktemp("gpu-tiny")
    dirs = {fam: build_tiny_model(fam, root / fam) for fam in TINY}
    dirs["zooish"] = build_tiny_model("llama", root / "zooish", vocab_size=len(zoo_vocab()) + 8, n_ctx=256)
    save_zoo_tokenizer(dirs["zooish"])
    return dirs


@pytest.fixture(scope="session")
def load_model(gpu_dirs):
    """``load(name, dtype=float32, device=DEVICE)``: a HookedModel, loaded once per (name, dtype, device).

    ``name`` is a family of :data:`TINY`, ``zooish`` or :data:`ZOO` (skipped while the zoo is not trained).
    """
    from thinklens import HookedModel
    from thinklens.zoo.registry import zoo_path

    cache: dict[tuple[str, torch.dtype, str], HookedModel] = {}

    def load(name: str, dtype: torch.dtype = torch.float32, device: str = DEVICE) -> HookedModel:
        key = (name, dtype, device)
        if key not in cache:
            if name == ZOO and zoo_path(ZOO) is None:
                pytest.skip(f"{ZOO} is not trained")
            src = str(gpu_dirs[name]) if name in gpu_dirs else name
            cache[key] = HookedModel.load(src, device=device, dtype=dtype)
        return cache[key]

    return load


@pytest.fixture()
def grader_without_math_verify(monkeypatch):
    """Where math-verify is not installed (the device machine), answers that are no plain numbers compare as
    exact strings: both label paths grade with the same function, so their labels stay comparable."""
    try:
        import math_verify  # noqa: F401
    except ImportError:
        monkeypatch.setattr("thinklens.data.answers.math_equal", lambda gold, pred, **kw: gold.strip() == pred.strip())


class _Metadata(dict):
    """sae-lens metadata: keys readable as attributes (a missing one is None)."""

    __getattr__ = dict.get


class StandInSAE(torch.nn.Module):
    """A TopK SAE with sae-lens's surface as feature steering reads it (``encode``, ``decode``, ``W_dec``,
    ``cfg.d_in``, ``cfg.d_sae``, ``cfg.metadata``): used where sae-lens is not installed (the device machine)."""

    def __init__(self, d_in: int, d_sae: int, k: int, site: str, seed: int = 0):
        from types import SimpleNamespace

        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.W_enc = torch.nn.Parameter(torch.randn(d_in, d_sae, generator=g) / d_in**0.5)
        self.b_enc = torch.nn.Parameter(torch.randn(d_sae, generator=g) * 0.1)
        self.W_dec = torch.nn.Parameter(torch.randn(d_sae, d_in, generator=g) / d_sae**0.5)
        self.b_dec = torch.nn.Parameter(torch.zeros(d_in))
        self.k = k
        self.cfg = SimpleNamespace(d_in=d_in, d_sae=d_sae, metadata=_Metadata(thinklens_site=site))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        pre = torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)  # [..., d_sae]
        top = pre.topk(self.k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, top.indices, top.values)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        return z @ self.W_dec + self.b_dec


def make_sae(d_in: int, site: str, device: str = DEVICE):
    """An untrained TopK SAE (sae-lens's when it is installed, else :class:`StandInSAE`) on ``device``, seeded."""
    try:
        from sae_lens import TopKSAE, TopKSAEConfig
    except ImportError:
        return StandInSAE(d_in, 2 * d_in, 4, site).to(device).eval()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        sae = TopKSAE(TopKSAEConfig(d_in=d_in, d_sae=2 * d_in, k=4))
        sae.b_enc.data.normal_(0, 0.1)
    sae.cfg.metadata.thinklens_site = site
    return sae.to(device).eval()
