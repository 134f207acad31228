"""Data and formats: problems in, prompts out, answers graded.

- ``problemsets``: :class:`ProblemSet` (GSM8K, MATH-500, AIME, your own files, the synthetic task);
  ``sources``: the rows of a problem set's file or folder
- ``prompts``: prompt files; ``formats``: prompt formats and thinking spans (``format_for(model)``)
- ``answers``: answer extraction and grading; ``equivalence``: math-verify with a time limit;
  ``grading``: agreement with a reference's labelled cases
- ``words``: reflection words and cues in generated text
- ``import_traces``: ``thinklens run import-traces``, completions generated elsewhere
"""
