"""Calibration: every number with its uncertainty, every method against a known answer.

- ``stats``: intervals, paired tests and findings (n, interval, control, verdict)
- ``controls``: planted and null settings (:class:`Setting`, :class:`Check`) and their registry, the
  ``thinklens.validations`` entry points
- ``settings``: the planted and null settings of the findings themselves
- ``validate``: ``thinklens run validate``, every method on its planted and null settings
"""
