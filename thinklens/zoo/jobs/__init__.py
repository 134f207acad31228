"""The zoo's jobs (``thinklens run zoo-train``, ``thinklens run zoo-eval``): one file each."""
