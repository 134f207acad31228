"""SAEs with sae-lens on a HookedModel site: train from local data, load any sae-lens folder, evaluate.

Training goes through sae-lens's own ``LanguageModelSAETrainingRunner`` with its ``HookedProxyLM``
(hook names are HF module paths, sae-lens's convention for ``AutoModelForCausalLM`` SAEs) and an
override dataset (:func:`thinklens.steering.corpora.token_rows`), W&B off, small buffers. The folder it writes is
sae-lens's format (``cfg.json`` + ``sae_weights.safetensors``), loadable by
``sae_lens.SAE.load_from_disk``; we add ``metadata.thinklens_site`` and a ``thinklens_metrics.json``.
Both training paths start the decoder bias at the mean of the activations (:func:`center_decoder_bias`): sae-lens
starts it at zero, and a residual with a large constant part (Gemma-3-270M's ``resid_post.9``: mean norm ~6500 against
~1500 of variation, most of it in one dimension) then left a TopK SAE with 90% dead latents and an explained variance
of -11. Metrics are sae-lens's ``run_evals``: explained variance, L0, dead features. CE loss recovered and KL are
not taken from it (it scores every position of right-padded rows, prompt and padding included, and gave
values above 1): :mod:`thinklens.steering.sae_fidelity` scores them on generated tokens only.

Example:
    >>> from tools.testing import build_tiny_model
    >>> import tempfile                                                              # doctest: +SKIP
    >>> m = HookedModel.load(str(build_tiny_model("llama", tempfile.mkdtemp())))      # doctest: +SKIP
    >>> sae, metrics = train_sae(m, ["w1 w2 w3"] * 64, SAETrainConfig(site="resid_post.0", d_sae=64,
    ...                          k=4, training_tokens=4096), out_dir=tempfile.mkdtemp())  # doctest: +SKIP
    >>> load_sae(out).cfg.d_sae                                                      # doctest: +SKIP
    64
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import json
import logging
import signal
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors.torch import load_file

from thinklens.engine.activation_store import ActivationStore
from thinklens.engine.adapters import site_of_transformer_lens
from thinklens.engine.sites import Site
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.steering.configs import SAETrainConfig
from thinklens.steering.corpora import sink_slice, special_ids, token_rows

if TYPE_CHECKING:
    from sae_lens import SAE

    from thinklens.engine.model import HookedModel

METRICS_FILE = "thinklens_metrics.json"


def architectures() -> list[str]:
    """Trainable SAE architectures, read from sae-lens's registry (CLI choices derive from it)."""
    from sae_lens.registry import SAE_TRAINING_CLASS_REGISTRY  # lazy: import cost (sae_lens: seconds)

    return sorted(SAE_TRAINING_CLASS_REGISTRY)


# ---------------------------------------------------------------- sites <-> sae-lens hook names

def output_site(model: "HookedModel", site: Site | str) -> Site:
    """The site whose module *output* equals ``site`` (``resid_pre.i`` is ``resid_post.{i-1}``).

    sae-lens's proxy hooks module outputs only, so input-side sites are mapped to the same tensor.
    """
    s = model.resolve_site(site)
    path = model.adapter.output_path(s)
    if path is None:
        raise ThinklensError.of("SAE site", str(s), "a site that is a module output (resid_post.i, mlp_out.i, attn_out.i, "
                                "embed, final_norm, or resid_pre.i with i > 0)", "train at embed or resid_post.0 instead")
    return model.adapter.site_of_output(path, model.n_layers)


def hook_name(model: "HookedModel", site: Site | str) -> str:
    """The sae-lens hook name (HF module path) of a site."""
    return model.adapter.module_path(output_site(model, site))[0]


def sae_site(sae: "SAE", model: "HookedModel") -> Site:
    """The model site an SAE reads, from its metadata (ours, an HF module path, or TransformerLens names).

    Example: ``blocks.3.hook_resid_post`` -> ``resid_post.3``; ``model.layers.3`` -> ``resid_post.3``.
    """
    md = sae.cfg.metadata
    ours = md.get("thinklens_site") if hasattr(md, "get") else None
    if ours:
        return model.resolve_site(ours)
    name = getattr(md, "hook_name", None) or ""
    site = site_of_transformer_lens(name) or model.adapter.site_of_output(name, model.n_layers)
    if site is not None:
        return model.resolve_site(site)
    raise ThinklensError.of("SAE hook name", name or None, "an HF module path of this model or a TransformerLens hook "
                            "name (blocks.<i>.hook_<kind>)", f"pass the site explicitly ({opt('site', 'resid_post.2')})")


def check_sae(model: "HookedModel", sae: "SAE", site: Site | str | None = None) -> Site:
    """Resolve the SAE's site on ``model`` and check its width; returns the site."""
    s = model.resolve_site(site) if site is not None else sae_site(sae, model)
    want = model.site_width(s)
    if int(sae.cfg.d_in) != want:
        raise ThinklensError.of("SAE width", f"d_in={sae.cfg.d_in}", f"{want} (the width of {s} on {model.name})",
                                "use an SAE trained on this model and site, or train one: `thinklens run sae`")
    return s


def check_feature(sae: "SAE", feature: int) -> int:
    """``feature`` if it indexes a latent of ``sae``; else a clear error."""
    n = int(sae.cfg.d_sae)
    if isinstance(feature, bool) or not isinstance(feature, int) or not 0 <= feature < n:
        raise ThinklensError.of("feature index", feature, f"an integer in 0..{n - 1} (this SAE has {n} features)",
                                "pick a feature from the feature browser or the steer job's results")
    return feature


def sae_folder(path: str | Path) -> tuple[Path, Path | None]:
    """``(sae-lens folder, run folder or None)`` of an SAE folder or of an ``sae`` run folder (its ``sae/``)."""
    p = Path(path)
    if not str(path):
        raise ThinklensError.of(opt_name("sae"), "nothing", "an SAE folder or an `sae` run folder", f"pass {opt('sae', 'runs/sae/<id>')}")
    if (p / "sae" / "cfg.json").is_file():
        return p / "sae", p
    if (p / "cfg.json").is_file():
        return p, None
    raise ThinklensError.of(opt_name("sae"), str(path), "an sae-lens SAE folder or an `sae` run folder", "train one: `thinklens run sae`")


def load_sae(path: str | Path, device: str = "cpu") -> "SAE":
    """Load any sae-lens SAE folder (``cfg.json`` + ``sae_weights.safetensors``) with sae-lens itself."""
    from sae_lens import SAE  # lazy: import cost (sae_lens: seconds)

    p = Path(path)
    if not (p / "cfg.json").is_file() or not (p / "sae_weights.safetensors").is_file():
        raise ThinklensError.of("SAE folder", str(p), "an sae-lens folder holding cfg.json and sae_weights.safetensors",
                                "train one with `thinklens run sae` or point at a saved sae-lens SAE")
    sae = SAE.load_from_disk(str(p), device=device)
    sae.eval()
    return sae


def read_metrics(path: str | Path) -> dict[str, Any] | None:
    """The ``thinklens_metrics.json`` written next to a trained SAE, if any."""
    p = Path(path) / METRICS_FILE
    return json.loads(p.read_text()) if p.is_file() else None


# ---------------------------------------------------------------- sae-lens plumbing

def _proxy(model: "HookedModel", name: str, device: str):
    """sae-lens's HookedProxyLM over a *copy*: it registers forward hooks it never removes."""
    from sae_lens.load_model import HookedProxyLM  # lazy: import cost (sae_lens: seconds)

    hf = copy.deepcopy(model.hf).to(device)
    hf.eval()
    return HookedProxyLM(hf, model.tokenizer, hook_names=[name])


@contextmanager
def quiet_training(seed: int, progress: bool = False):
    """Fork the RNG (sae-lens inits and shuffles from the global one), restore the signal handlers
    sae-lens installs for SIGINT/SIGTERM and its logger level, so training leaves no global state behind; sae-lens's
    "Training SAE" bar is shown only with ``progress`` (a job passes its ``--progress``; small inner SAEs never)."""
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    log = logging.getLogger("sae_lens")
    level = log.level
    log.setLevel(logging.ERROR)  # "you passed an override dataset/model" is what we mean to do
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        torch.manual_seed(seed)
        try:
            with _trainer_bar(progress):
                yield
        finally:
            log.setLevel(level)
            for s, h in old.items():
                signal.signal(s, h)


def _flatten_metrics(all_metrics: dict[str, Any], feature_metrics: dict[str, Any], d_sae: int) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for group in all_metrics.values():
        flat.update({k: float(v) for k, v in group.items()})
    dens = feature_metrics.get("feature_density")
    if dens is not None:
        dens = torch.as_tensor(dens)
        flat["dead_features"] = int((dens == 0).sum())
        flat["dead_fraction"] = float((dens == 0).float().mean())
    flat["d_sae"] = d_sae
    return flat


def _evals(sae: "SAE", proxy, store, n_batches: int, exclude: list[int]) -> dict[str, Any]:
    from sae_lens.evals import EvalConfig, run_evals  # lazy: import cost (sae_lens: seconds)
    from sae_lens.training.activation_scaler import ActivationScaler  # lazy: import cost (sae_lens: seconds)

    ec = EvalConfig(n_eval_reconstruction_batches=n_batches, n_eval_sparsity_variance_batches=n_batches,
                    compute_ce_loss=False, compute_kl=False, compute_l2_norms=True, compute_sparsity_metrics=True,
                    compute_variance_metrics=True, compute_featurewise_density_statistics=True)
    was_training = sae.training
    sae.eval()
    try:
        metrics, feats = run_evals(sae, store, proxy, ActivationScaler(), ec, exclude_special_tokens=exclude)
    finally:
        sae.train(was_training)
    return _flatten_metrics(metrics, feats, int(sae.cfg.d_sae))


def training_sae_config(cfg: SAETrainConfig, d_in: int, device: str = "cpu"):
    """sae-lens's training config of ``cfg.architecture`` (from its registry) for a ``d_in``-wide site."""
    from sae_lens.registry import SAE_TRAINING_CLASS_REGISTRY  # lazy: import cost (sae_lens: seconds)

    if cfg.architecture not in SAE_TRAINING_CLASS_REGISTRY:
        near = difflib.get_close_matches(cfg.architecture, list(SAE_TRAINING_CLASS_REGISTRY), n=1)
        raise ThinklensError.of("SAE architecture", cfg.architecture, f"one of {', '.join(architectures())}",
                                f"did you mean {near[0]!r}?" if near else "pick one of the listed architectures")
    cls = SAE_TRAINING_CLASS_REGISTRY[cfg.architecture][1]
    names = {f.name for f in dataclasses.fields(cls)}
    extra = {k: getattr(cfg, k) for k in ("k", "l1_coefficient", "l0_coefficient") if k in names}
    return cls(d_in=d_in, d_sae=cfg.d_sae, device=device, **extra)


MEAN_INIT_BATCHES = 4
"""Store batches (``store_batch_size_prompts`` rows each, special tokens dropped) whose mean starts the decoder bias."""


@torch.no_grad()
def center_decoder_bias(sae: "SAE", rows: torch.Tensor) -> None:
    """Start ``sae``'s decoder bias at the mean of activation ``rows`` ``[rows, d]`` (sae-lens starts it at zero).

    The SAE then codes deviations from the mean from its first step. Started at zero, it must first learn the
    constant part of the residual with Adam steps of about ``lr`` each: on a residual whose mean is large against its
    spread (Gemma-3-270M, a norm of ~6500 of which ~6200 in one dimension) it never does in a training budget, and
    TopK latents spent on the offset die (Gao et al. 2024 and Bricken et al. 2023 start this bias at the data's
    geometric median; the mean is sae-lens's former ``b_dec_init_method="mean"``).

    Example:
        >>> from sae_lens import TopKSAE, TopKSAEConfig
        >>> sae = TopKSAE(TopKSAEConfig(d_in=2, d_sae=4, k=1))
        >>> center_decoder_bias(sae, torch.tensor([[1.0, 100.0], [3.0, 100.0]]))
        >>> sae.b_dec.tolist()
        [2.0, 100.0]
    """
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ThinklensError.of("activation rows for the decoder bias", f"a tensor of shape {tuple(rows.shape)}",
                                "[rows, d] with rows >= 1", "train on texts with at least one non-special token")
    sae.b_dec.data.copy_(rows.double().mean(0).to(sae.b_dec.dtype))


def _store_rows(store, n_batches: int) -> torch.Tensor:
    """``[rows, d]``: ``n_batches`` batches of a sae-lens activation store, special tokens dropped (what it trains on)."""
    return torch.cat([store.get_filtered_llm_batch() for _ in range(n_batches)])


def _training_runner():
    """sae-lens's training runner without its signal handlers.

    Its ``run_trainer_with_interruption_handling`` replaces the SIGINT/SIGTERM handlers with one raising its own
    ``InterruptedException`` (an ``Exception``: a Ctrl-C then ended the ``sae`` job with exit 1 and its run left
    "running"). Here the trainer just fits, so the job runner's handlers (:mod:`thinklens.runs.interrupts`) stay in
    force: the run is marked interrupted and resumes (it saves no checkpoint: ``checkpoint_path`` is None).
    """
    from sae_lens import LanguageModelSAETrainingRunner  # lazy: import cost (sae_lens: seconds)

    class Runner(LanguageModelSAETrainingRunner):
        def run_trainer_with_interruption_handling(self, trainer):  # type: ignore[override]
            return trainer.fit()

    return Runner


@contextmanager
def _trainer_bar(enabled: bool):
    """sae-lens's "Training SAE" bar shown or hidden (``--no-progress``): its trainer module builds the bar from its
    own ``tqdm`` name, so that name is bound to a disabled bar inside the block and restored after."""
    if enabled:
        yield
        return

    from sae_lens.training import sae_trainer  # lazy: import cost (sae_lens: seconds)

    bar = sae_trainer.tqdm
    sae_trainer.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        sae_trainer.tqdm = bar


def train_sae(model: "HookedModel", texts: Sequence[str], cfg: SAETrainConfig, *,
              out_dir: str | Path, progress: bool = False) -> tuple["SAE", dict[str, Any]]:
    """Train an SAE with sae-lens on ``cfg.site`` of ``model`` from local ``texts``; save and evaluate it.

    Returns the SAE as loaded back from ``out_dir`` (sae-lens format) and sae-lens's metrics
    (also written to ``out_dir/thinklens_metrics.json``). ``progress``: show sae-lens's training bar (the ``sae`` job
    passes its own ``--progress``). SIGINT and
    SIGTERM reach the caller as they would anywhere else (sae-lens's own handlers are not installed).
    """
    from sae_lens import LanguageModelSAERunnerConfig, LoggingConfig  # lazy: import cost (sae_lens: seconds)

    site = model.resolve_site(cfg.site)
    name = hook_name(model, site)
    device = str(model.device)
    exclude = special_ids(model.tokenizer)
    ds = token_rows(model.tokenizer, texts, cfg.context_size).shuffle(seed=cfg.seed)
    width = len(ds[0]["input_ids"])
    n_buffer = max(cfg.n_batches_in_buffer, -(-2 * cfg.train_batch_size_tokens // width))
    out = Path(out_dir)
    runner_cfg = LanguageModelSAERunnerConfig(
        sae=training_sae_config(cfg, model.site_width(site), device), model_name=str(model.name), model_class_name="AutoModelForCausalLM",
        hook_name=name, dataset_path=f"local:{len(texts)} texts", is_dataset_tokenized=True, streaming=False,
        context_size=width, training_tokens=cfg.training_tokens, train_batch_size_tokens=cfg.train_batch_size_tokens,
        store_batch_size_prompts=cfg.store_batch_size_prompts, n_batches_in_buffer=n_buffer,
        lr=cfg.lr, lr_warm_up_steps=cfg.lr_warm_up_steps, seed=cfg.seed, device=device, prepend_bos=False,
        logger=LoggingConfig(log_to_wandb=False), checkpoint_path=None, output_path=str(out),
        exclude_special_tokens=exclude, seqpos_slice=sink_slice(ds["input_ids"], exclude),
        n_eval_batches=cfg.n_eval_batches, verbose=False,
        n_batches_for_norm_estimate=8, dead_feature_window=max(50, cfg.training_tokens // cfg.train_batch_size_tokens // 4),
        feature_sampling_window=max(100, cfg.training_tokens // cfg.train_batch_size_tokens // 2),
    )
    with quiet_training(cfg.seed, progress):  # sae-lens's own bar follows progress (tqdm reads its settings at import)
        runner = _training_runner()(runner_cfg, override_dataset=ds, override_model=_proxy(model, name, device))
        runner.sae.cfg.metadata.thinklens_site = str(site)
        center_decoder_bias(runner.sae, _store_rows(runner.activations_store, MEAN_INIT_BATCHES))
        trained = runner.run()
        metrics = _evals(trained, runner.model, runner.activations_store, cfg.n_eval_batches, exclude)
    metrics.update(site=str(site), hook_name=name, architecture=cfg.architecture, k=cfg.k,
                   training_tokens=cfg.training_tokens, n_texts=len(texts))
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2))
    return load_sae(out, device=device), metrics


def evaluate_sae(model: "HookedModel", sae: "SAE", texts: Sequence[str], *, site: Site | str | None = None,
                 n_batches: int = 8, batch_prompts: int = 32, context_size: int | None = None) -> dict[str, Any]:
    """sae-lens's metrics for any SAE on ``model`` over local ``texts`` (explained variance, L0, dead features);
    CE loss recovered and KL come from :func:`thinklens.steering.sae_fidelity.sae_fidelity` on generated tokens."""
    from sae_lens.training.activations_store import ActivationsStore  # lazy: import cost (sae_lens: seconds)

    s = check_sae(model, sae, site)
    name = hook_name(model, s)
    ds = token_rows(model.tokenizer, texts, context_size)
    width = len(ds[0]["input_ids"])
    device = str(sae.cfg.device)
    proxy = _proxy(model, name, device)
    exclude = special_ids(model.tokenizer)
    # Evals read hook_name from the SAE's metadata; a foreign SAE may name its hook differently.
    old = sae.cfg.metadata.hook_name
    sae.cfg.metadata.hook_name = name
    try:
        with quiet_training(0):
            store = ActivationsStore(
                model=proxy, dataset=ds, streaming=False, hook_name=name, hook_head_index=None, context_size=width,
                d_in=int(sae.cfg.d_in), n_batches_in_buffer=2, total_training_tokens=10**9,
                store_batch_size_prompts=batch_prompts, train_batch_size_tokens=4096, prepend_bos=False,
                normalize_activations="none", device=torch.device(device), dtype="float32",
                exclude_special_tokens=torch.tensor(exclude), seqpos_slice=sink_slice(ds["input_ids"], exclude),
            )
            return _evals(sae, proxy, store, n_batches, exclude) | {"site": str(s), "hook_name": name}
    finally:
        sae.cfg.metadata.hook_name = old


# ---------------------------------------------------------------- SAEs from stored activation rows

def read_activation_rows(path: str | Path, site: Site | str | None = None) -> torch.Tensor:
    """Activation rows ``[rows, d]`` (float32) from a safetensors file or an ActivationStore folder.

    A safetensors file holds one 2-d tensor, or several of which ``site`` (its name, e.g. ``resid_post.2``)
    or ``activations`` is taken. A store folder (:class:`thinklens.engine.activation_store.ActivationStore`) gives its rows at
    ``site``, or at its only site. Rows are read into memory.

    Example:
        >>> import tempfile, torch
        >>> from safetensors.torch import save_file
        >>> f = tempfile.mkdtemp() + "/acts.safetensors"
        >>> save_file({"activations": torch.ones(5, 3)}, f)
        >>> read_activation_rows(f).shape
        torch.Size([5, 3])
    """
    p = Path(path)
    want = None if site is None else str(site)
    if p.is_file() and p.suffix == ".safetensors":
        tensors = load_file(str(p))
        names = sorted(tensors)
        key = want if want in tensors else ("activations" if "activations" in tensors else None)
        if key is None and len(names) == 1:
            key = names[0]
        if key is None:
            raise ThinklensError.of("activations file", f"{p} with tensors {names}", "one tensor, or one named "
                                    f"{want or 'activations'}", f"pass {opt('site', '<name>')} or save one [rows, d] tensor")
        rows = tensors[key]
    elif p.is_dir() and any(p.glob("shard-*.json")):
        store = ActivationStore(p)
        sites = [str(s) for s in store.sites]
        key = want if want is not None else (sites[0] if len(sites) == 1 else None)
        if key not in sites:
            raise ThinklensError.of("activation store site", want, f"one of {', '.join(sites)}", f"pass {opt('site', '<one of them>')}")
        rows = torch.cat([b[Site.parse(key)] for b in store.iter_batches(65536, [key])])
    else:
        raise ThinklensError.of(opt_name("activations"), str(p), "a .safetensors file of [rows, d] activations or an "
                                "ActivationStore folder (shard-*.safetensors + shard-*.json)", "check the path")
    if rows.ndim != 2 or rows.shape[0] < 2:
        raise ThinklensError.of("activation rows", f"a tensor of shape {tuple(rows.shape)}", "[rows, d] with rows >= 2",
                                "save one activation vector per row")
    rows = rows.float()
    if not torch.isfinite(rows).all():
        raise ThinklensError.of("activation rows", "non-finite values", "finite activations", "drop the NaN/inf rows")
    return rows


class _RowBatches:
    """An endless iterator of random ``[batch, d]`` batches of ``rows`` (a local generator: reproducible)."""

    def __init__(self, rows: torch.Tensor, batch: int, seed: int):
        self.rows, self.batch = rows, batch
        self.g = torch.Generator().manual_seed(seed)

    def __iter__(self) -> "_RowBatches":
        return self

    def __next__(self) -> torch.Tensor:
        return self.rows[torch.randint(len(self.rows), (self.batch,), generator=self.g)]


@torch.no_grad()
def row_metrics(sae: "SAE", rows: torch.Tensor) -> dict[str, Any]:
    """Explained variance, mean L0 (active features per row), MSE and dead features of ``sae`` on ``rows``
    (sae-lens's definitions: variance explained summed over dimensions; dead = never active on these rows)."""
    dev = next(sae.parameters()).device
    x = rows.to(dev, torch.float32)  # [rows, d]
    z = sae.encode(x)  # [rows, feature]
    x_hat = sae.decode(z)  # [rows, d]
    resid = (x - x_hat).pow(2).sum(-1)  # [rows]
    total = (x - x.mean(0)).pow(2).sum(-1)  # [rows]
    active = (z > 0).float()
    return {"explained_variance": float(1 - resid.sum() / total.sum().clamp_min(1e-12)), "l0": float(active.sum(-1).mean()),
            "mse": float(resid.mean() / x.shape[-1]), "dead_features": int((active.sum(0) == 0).sum()),
            "dead_fraction": float((active.sum(0) == 0).float().mean()), "d_sae": int(sae.cfg.d_sae), "n_rows": int(len(x))}


def train_sae_on_rows(rows: torch.Tensor, cfg: SAETrainConfig, *, out_dir: str | Path, held_out: torch.Tensor | None = None,
                      source: str = "", progress: bool = False) -> tuple["SAE", dict[str, Any]]:
    """Train an SAE with sae-lens's own trainer on stored activation rows ``[rows, d]``; save and evaluate it.

    The model-free path of ``thinklens run sae --activations``: the same training config and architectures as
    :func:`train_sae`, batches of ``cfg.train_batch_size_tokens`` rows drawn at random (seeded) for
    ``cfg.training_tokens`` rows in all. The folder is sae-lens's format (``metadata.thinklens_site`` is
    ``cfg.site``, the site the rows were read at); metrics (:func:`row_metrics`) are on ``held_out`` rows
    (default: the training rows).
    """
    from sae_lens import LoggingConfig  # lazy: import cost (sae_lens: seconds)
    from sae_lens.config import SAETrainerConfig  # lazy: import cost (sae_lens: seconds)
    from sae_lens.registry import SAE_TRAINING_CLASS_REGISTRY  # lazy: import cost (sae_lens: seconds)
    from sae_lens.training.sae_trainer import SAETrainer  # lazy: import cost (sae_lens: seconds)

    device = "cpu"
    sae_cfg = training_sae_config(cfg, int(rows.shape[1]), device)
    steps = max(1, cfg.training_tokens // cfg.train_batch_size_tokens)
    trainer_cfg = SAETrainerConfig(
        total_training_samples=steps * cfg.train_batch_size_tokens, train_batch_size_samples=cfg.train_batch_size_tokens,
        lr=cfg.lr, lr_end=cfg.lr, lr_warm_up_steps=min(cfg.lr_warm_up_steps, steps // 2), device=device,
        dead_feature_window=max(50, steps // 4), feature_sampling_window=max(100, steps // 2),
        logger=LoggingConfig(log_to_wandb=False), n_batches_for_norm_estimate=8)
    out = Path(out_dir)
    with quiet_training(cfg.seed, progress):
        sae = SAE_TRAINING_CLASS_REGISTRY[cfg.architecture][0](sae_cfg)
        sae.cfg.metadata.thinklens_site = cfg.site
        sae.cfg.metadata.hook_name = cfg.site
        sae.cfg.metadata.dataset_path = source or f"{len(rows)} activation rows"
        center_decoder_bias(sae, rows)
        trained = SAETrainer(trainer_cfg, sae, _RowBatches(rows.to(device), cfg.train_batch_size_tokens, cfg.seed)).fit()
        trained.save_inference_model(out)
    loaded = load_sae(out)
    metrics = row_metrics(loaded, rows if held_out is None else held_out)
    metrics.update(site=cfg.site, architecture=cfg.architecture, k=cfg.k, training_tokens=steps * cfg.train_batch_size_tokens,
                   n_rows=int(len(rows)), source=source)
    (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2))
    return loaded, metrics
