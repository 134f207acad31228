"""Settings of the probes jobs that library modules read: :class:`LynxJobConfig` (``thinklens run lynx``, the job is
:mod:`thinklens.probes.jobs.lynx`; :mod:`thinklens.probes.lynx_splits` draws its problem splits from it). Library code imports configs
from here, never from a job module.

Example:
    >>> LynxJobConfig(n_train=50).n_problems("train"), LynxJobConfig().cue_words is None
    (50, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from thinklens.data.problemsets import DataOptions, SamplingOptions
from thinklens.errors import ThinklensError, opt, opt_name
from thinklens.probes.lynx import VALIDITY_DELTAS, LynxConfig
from thinklens.tasks import StepRange


@dataclass(frozen=True)
class LynxJobConfig(DataOptions, LynxConfig, StepRange, SamplingOptions):
    """Settings of ``thinklens run lynx``: the LYNX settings, with defaults for the zoo (tiny-think) on a
    CPU, plus the model, problems, prompt format, sampling and probe of the job. The rollouts are sampled at the
    reference's temperature 0.6 and top-p 0.95 by default. The LYNX fields are :class:`~thinklens.probes.lynx.LynxConfig`'s."""

    model: str = "tiny-think"
    """Zoo name, local model folder or hub id."""
    data: str = ""
    """Problems the probe is trained on: a .jsonl/.json/.parquet/.csv file, a saved HF datasets folder, a cached hub id
    (a @split suffix picks a split) or synthetic:MIN-MAX[:N]; empty: the synthetic task, one seeded stream per split
    (--min-steps..--max-steps)."""
    calibration_data: str = ""
    """Problems that calibrate the conformal thresholds (same kinds of source as --data; fields found by name); empty:
    a seeded split of --data, disjoint from the others."""
    test_data: str = ""
    """Problems the exits are evaluated on (same kinds of source as --data; fields found by name); empty: a seeded
    split of --data, disjoint from the others."""
    allow_overlap: bool = False
    """Allow a question in two of the train, calibration and test problems (refused by default)."""
    n_train: int = 200
    """Problems (one rollout each) whose events train the probe."""
    n_calibration: int = 200
    """Problems whose events calibrate the conformal thresholds (disjoint from training; at most all of
    --calibration-data)."""
    n_test: int = 200
    """Problems whose events evaluate exits and measure validity (the third split; at most all of --test-data)."""
    seed: int = 0
    """Seed of the problems, the splits and the sampling (each batch derives its own)."""
    temperature: float = 0.6
    top_p: float = 0.95
    max_new_tokens: int | None = None
    """Rollout length cap; none: the task protocol's budget for a zoo style (from --max-steps), else 4096 (or less
    when the model's context cannot hold the prompt, the rollout and a forced answer)."""
    hidden_layer_sizes: tuple[int, ...] = (256, 64)
    """Hidden widths of the probe MLP (reference: 256,64)."""
    fractions: tuple[float, ...] = (0.25, 0.5, 0.75)
    """Fixed-fraction baselines: exit at the first event past this share of the rollout."""
    threshold: float = 0.5
    """Uncalibrated baseline: exit at the first event with probe p above this."""
    skip_vacuous: bool = False
    """Drop deltas too small for the calibration class sizes instead of stopping with an error."""
    calibration_fallbacks: bool = True
    """Let the calibration split's fallback events (of cue-less rollouts) calibrate the positive class's threshold too;
    false: its real cue events only. The negative class, whose threshold carries the per-event bound, is always
    calibrated on real cue events only, exchangeable with the test events LYNX exits at (the reference calibrates on
    fallback negatives too, which broke the bound)."""
    gate_auroc: float | None = 0.5
    """Discrimination gate: LYNX exits only when the 95% interval of the probe's AUROC on the calibration split's cue
    events (clustered by rollout; probes/exit_gate.py) lies above this; otherwise it abstains (no exits at any delta)
    and the findings say so. None: no gate, as the reference."""
    probe: str | None = None
    """Folder of a saved LYNX probe to use instead of training one (must match the sites; no training rollouts then)."""
    batch_size: int = 32
    """Rollouts per cached batch (generation and feature capture)."""
    label_batch_size: int = 64
    """Forced exits decoded together."""

    def check(self) -> None:
        from thinklens.probes.conformal import min_calibration_events  # lazy: CLI start-up (scipy)

        if self.data_fields and not self.data:
            raise ThinklensError.of("data_fields", self.data_fields, f"a field mapping for {opt('data')}",
                                    f"pass {opt('data')} too, or drop {opt('data_fields')}")
        for name in ("n_train", "n_calibration", "n_test", "batch_size", "label_batch_size"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ThinklensError.of(name, getattr(self, name), "an integer >= 1", "use the default")
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise ThinklensError.of("max_new_tokens", self.max_new_tokens, "None or an integer >= 1", "use None")
        if not self.deltas:
            raise ThinklensError.of("deltas", self.deltas, "at least one level in (0, 1)", f"use {VALIDITY_DELTAS}")
        need = max(min_calibration_events(d) for d in self.deltas)  # also rejects deltas outside (0, 1)
        most = self.n_calibration * self.max_events_calibration
        if most < need and not self.skip_vacuous:
            raise ThinklensError.of(
                "calibration size", f"at most {most} calibration events ({self.n_calibration} problems x "
                f"{self.max_events_calibration} events)", f"at least {need} events of each class for "
                f"delta={min(self.deltas)}", f"draw more calibration problems ({opt_name('n_calibration')}; a rollout gives a "
                f"few events), raise the smallest delta, or pass {opt('skip_vacuous', True)}")
        if any(not 0.0 <= f <= 1.0 for f in self.fractions):
            raise ThinklensError.of("fractions", self.fractions, "fractions in [0, 1]", "use 0.25,0.5,0.75")
        if self.gate_auroc is not None and not (isinstance(self.gate_auroc, (int, float)) and 0.5 <= self.gate_auroc < 1.0):
            raise ThinklensError.of("gate_auroc", self.gate_auroc, "None or an AUROC in [0.5, 1)",
                                    f"use 0.5 (chance), or {opt('gate_auroc', None)} to turn the gate off")
        if not 0.0 < self.threshold < 1.0:
            raise ThinklensError.of("threshold", self.threshold, "a probability in (0, 1)", "use 0.5")
        if not self.hidden_layer_sizes or min(self.hidden_layer_sizes) < 1:
            raise ThinklensError.of("hidden_layer_sizes", self.hidden_layer_sizes, "positive widths", "use 256,64")

    def n_problems(self, split: str) -> int:
        """Problems of ``split``."""
        return {"train": self.n_train, "calibration": self.n_calibration, "test": self.n_test}[split]
