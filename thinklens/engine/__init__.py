"""The model engine: any Hugging Face causal LM behind one hook layer.

- ``model``: :class:`HookedModel`, loading (zoo name, local folder or hub id) and the forward pass
- ``adapters``, ``discovery``: where each site lives in an architecture, and finding it for an unlisted one
- ``sites``: typed activation sites (``resid_post.3``); ``hooks``: context-managed hooks on them
- ``interventions``: value objects a hook applies (add a vector, replace, inject embeddings, repeat a block)
- ``capture``: ``thinklens run capture``, activations into an ``activation_store`` (sharded safetensors)
- ``parity``: the self-check of every local load against HF ``output_hidden_states``; ``load_errors``: why a
  folder cannot load
- ``tokenization``: the one prompt-to-ids rule; ``training``: what every trainer shares
- ``nnsight_backend``: the same capture and generation through nnsight (remote models)
"""
