"""Latent reasoning: Coconut, CODI, latent SFT and plain SFT trainers, LatentSeek, and their evaluation.

The public names below are importable from the package (``from latent import CODIConfig, train_latent``);
each loads its module on first use. Modules: ``config`` (the trainers' and jobs' configs), ``coconut`` /
``codi`` / ``latent_sft`` / ``sft`` (the methods), ``train`` (``train_latent``), ``latent_model`` (a trained
model loaded back), ``latentseek`` (test-time search in latent space), ``evaluate`` (the comparison table),
``jobs`` (``thinklens run codi|coconut|latent-sft|sft|latent-eval|latent-seek``).
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "TrainConfig": "latent.config", "CoconutConfig": "latent.config", "CODIConfig": "latent.config",
    "LatentSFTConfig": "latent.config", "SFTConfig": "latent.config", "LatentSeekConfig": "latent.config",
    "EvalConfig": "latent.config",
    "Coconut": "latent.coconut",
    "CODI": "latent.codi",
    "LatentSFT": "latent.latent_sft",
    "SFT": "latent.sft",
    "LatentModel": "latent.latent_model", "load_latent_model": "latent.latent_model",
    "latent_seek": "latent.latentseek", "SeekResult": "latent.latentseek",
    "train_latent": "latent.train",
    "LatentMethod": "latent.methods", "method_named": "latent.methods",
    "LatentSession": "latent.session",
    "ContinuousThought": "latent.continuous_thought",
    "eval_text_model": "latent.evaluate",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import latent`` loads none of them,
``from latent import X`` loads X's module only, and ``dir(latent)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
