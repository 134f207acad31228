"""The probes package's jobs (``thinklens run lynx``, ``thinklens run probe``), one file each."""
