"""Latent reasoning: Coconut, CODI, latent SFT and plain SFT trainers, LatentSeek, and their evaluation.

The public names below are importable from the package (``from thinklens.latent import CODIConfig, train_latent``);
each loads its module on first use. Modules: ``config`` (the trainers' and jobs' configs), ``coconut`` /
``codi`` / ``latent_sft`` / ``sft`` (the methods), ``train`` (``train_latent``), ``latent_model`` (a trained
model loaded back), ``latentseek`` (test-time search in latent space), ``evaluate`` (the comparison table),
``jobs`` (``thinklens run codi|coconut|latent-sft|sft|latent-eval|latent-seek``).
"""

from thinklens.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "TrainConfig": "thinklens.latent.config", "CoconutConfig": "thinklens.latent.config", "CODIConfig": "thinklens.latent.config",
    "LatentSFTConfig": "thinklens.latent.config", "SFTConfig": "thinklens.latent.config", "LatentSeekConfig": "thinklens.latent.config",
    "EvalConfig": "thinklens.latent.config",
    "Coconut": "thinklens.latent.coconut",
    "CODI": "thinklens.latent.codi",
    "LatentSFT": "thinklens.latent.latent_sft",
    "SFT": "thinklens.latent.sft",
    "LatentModel": "thinklens.latent.latent_model", "load_latent_model": "thinklens.latent.latent_model",
    "latent_seek": "thinklens.latent.latentseek", "SeekResult": "thinklens.latent.latentseek",
    "train_latent": "thinklens.latent.training_loop",
    "LatentMethod": "thinklens.latent.methods", "method_named": "thinklens.latent.methods",
    "LatentSession": "thinklens.latent.session",
    "ContinuousThought": "thinklens.latent.continuous_thought",
    "eval_text_model": "thinklens.latent.evaluate",
}
"""Public name -> defining module, imported on first use (PEP 562): ``import thinklens.latent`` loads none of them,
``from thinklens.latent import X`` loads X's module only, and ``dir(latent)`` lists them all (tab completion)."""

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
