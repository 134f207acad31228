"""thinklens: see how language models reason from the inside, and act on it.

Example:
    >>> from thinklens import HookedModel, Site
    >>> Site.parse("resid_post.2")
    Site(kind='resid_post', layer=2)
"""

from thinklens.errors import ThinklensError
from thinklens.interventions import AddVector, HookFn, InjectEmbeddings, RepeatBlock, ReplaceActivation
from thinklens.model import HookedModel
from thinklens.sites import Site, parse_sites
from thinklens.trace import ActivationBatch, Trace

__all__ = [
    "ActivationBatch", "AddVector", "HookFn", "HookedModel", "InjectEmbeddings", "RepeatBlock",
    "ReplaceActivation", "Site", "ThinklensError", "Trace", "parse_sites",
]
__version__ = "0.1.0"
