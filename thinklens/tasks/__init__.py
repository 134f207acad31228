"""Synthetic multi-step arithmetic in GSM8k-Aug format, with ground truth at every step.

Example:
    >>> from thinklens.tasks import TaskConfig, generate_problems, render_example
    >>> p = generate_problems(1, seed=0, config=TaskConfig(min_steps=2, max_steps=2))[0]
    >>> prompt, target = render_example(p, "cot")
    >>> target.endswith(f"#### {p.answer}")
    True
"""

from thinklens.tasks.config import KNOWN_OPS, MAX_STEPS, ZOO_MAX_NUMBER, StepRange, TaskConfig, check_step_range
from thinklens.tasks.generator import NAMES, OBJECTS, as_rng, generate_problem, generate_problems
from thinklens.tasks.problem import (
    PHRASES,
    WORD_PATTERN,
    Distractor,
    Problem,
    Step,
    ThinkStep,
    apply_op,
    spaced,
    words,
)
from thinklens.tasks.render import (
    ANSWER_MARKER,
    CUES,
    REFLECTION_WORDS,
    STYLES,
    TargetAlignment,
    align_target,
    check_style,
    reflection_stats,
    render_example,
    render_prompt,
    render_target,
)

__all__ = [
    "ANSWER_MARKER", "CUES", "KNOWN_OPS", "MAX_STEPS", "NAMES", "OBJECTS", "PHRASES", "REFLECTION_WORDS", "STYLES",
    "WORD_PATTERN", "ZOO_MAX_NUMBER", "Distractor", "Problem", "Step", "StepRange", "TargetAlignment", "TaskConfig",
    "ThinkStep", "align_target", "apply_op", "as_rng", "check_step_range", "check_style", "generate_problem", "generate_problems",
    "reflection_stats", "render_example", "render_prompt", "render_target", "spaced", "words",
]
