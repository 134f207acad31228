"""What every trainer shares: the learning-rate schedule, AdamW parameter groups, checkpoints and resume,
and the Accelerate set-up (one process, several CPU processes or GPUs).

Used by the zoo trainer (``thinklens/zoo/trainer.py``), the latent trainers (``latent/training_loop.py``) and GRPO
(``thinklens/zoo/grpo.py``). Checkpoints are safetensors plus a JSON state, never pickle: a folder with
``model.safetensors`` (the module's weights; tied copies once), ``optimizer.safetensors`` (the AdamW
moments and step counts keyed by parameter name, so they survive re-building the module) and
``state.json`` (the trainer's step, loss history, elapsed time, ...). It is written to a temporary folder
and swapped in, so a kill never leaves half a checkpoint. A trainer whose batch ``k`` and dropout draws
depend only on ``(seed, k)`` resumes from it exactly where a straight run would be.

Example:
    >>> import torch, tempfile
    >>> from pathlib import Path
    >>> net = torch.nn.Linear(2, 2)
    >>> opt = adamw(net.named_parameters(), lr=1e-2, weight_decay=0.1)
    >>> [len(g["params"]) for g in opt.param_groups], [g["weight_decay"] for g in opt.param_groups]
    ([1, 1], [0.1, 0.0])
    >>> set_lr(opt, warmup_cosine_lr(0, peak=1e-2, warmup_steps=4, decay_steps=10, floor_ratio=0.1))
    >>> net(torch.ones(1, 2)).sum().backward(); opt.step()
    >>> folder = Path(tempfile.mkdtemp()) / "checkpoint"
    >>> save_checkpoint(folder, net, opt, {"step": 1})
    >>> again = torch.nn.Linear(2, 2)
    >>> load_checkpoint(folder, again, adamw(again.named_parameters(), lr=1e-2, weight_decay=0.1))
    {'step': 1}
    >>> torch.equal(again.weight, net.weight)
    True
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from thinklens.errors import ThinklensError, opt
from thinklens.runs.configcli import ConfigGroup
from thinklens.runs.folders import RunFolder, atomic_write_json, replace_dir

if TYPE_CHECKING:
    import torch


# ---------------------------------------------------------------- learning rate


def warmup_cosine_lr(step: int, *, peak: float, warmup_steps: int, decay_steps: int, floor_ratio: float) -> float:
    """Learning rate at optimizer step ``step`` (0-based): linear warmup, then cosine decay to a floor.

    Warmup: ``peak * (step + 1) / (warmup_steps + 1)`` for ``step < warmup_steps``. Then a half cosine
    from ``peak`` to ``peak * floor_ratio`` over ``decay_steps`` steps, held at the floor after.

    Args:
        decay_steps: steps from the end of warmup to the floor (``total - warmup`` reaches it one step
            after the last; ``total - warmup - 1`` at the last step). Values below 1 count as 1.

    Example:
        >>> [round(warmup_cosine_lr(s, peak=1.0, warmup_steps=2, decay_steps=4, floor_ratio=0.1), 3) for s in range(8)]
        [0.333, 0.667, 1.0, 0.868, 0.55, 0.232, 0.1, 0.1]
    """
    if step < warmup_steps:
        return peak * (step + 1) / (warmup_steps + 1)
    progress = min(1.0, (step - warmup_steps) / max(1, decay_steps))
    floor = peak * floor_ratio
    return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * progress))


def set_lr(opt: "torch.optim.Optimizer", lr: float) -> None:
    """Set the learning rate of every parameter group."""
    for group in opt.param_groups:
        group["lr"] = lr


# ---------------------------------------------------------------- optimizer


@dataclass(frozen=True)
class OptimOptions(ConfigGroup):
    """The AdamW settings of a trainer's config (:func:`adamw`, then a gradient-norm clip each step). A config
    redeclares a field only to change its default; ``check`` validates the values for every config that has them."""

    lr: float = 1e-3
    """Peak learning rate (AdamW)."""
    weight_decay: float = 0.01
    """AdamW weight decay on matrices (norm gains and biases never decay)."""
    grad_clip: float = 1.0
    """Gradient-norm clip (0 = off)."""

    def check(self) -> None:
        if isinstance(self.lr, bool) or not isinstance(self.lr, (int, float)) or not (self.lr > 0 and math.isfinite(self.lr)):
            raise ThinklensError.of("lr", self.lr, "a finite number > 0", f"pass {opt('lr', 0.001)}")
        for name in ("weight_decay", "grad_clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= 0 and math.isfinite(value)):
                raise ThinklensError.of(name, value, "a finite number >= 0", f"pass --{name.replace('_', '-')} 1")



def decay_groups(named_params: Iterable[tuple[str, "torch.nn.Parameter"]], weight_decay: float) -> list[dict[str, Any]]:
    """Two AdamW parameter groups: matrices (embeddings, projections) decay; norm gains and biases do not."""
    params = list(named_params)
    return [{"params": [p for _, p in params if p.ndim >= 2], "weight_decay": weight_decay},
            {"params": [p for _, p in params if p.ndim < 2], "weight_decay": 0.0}]


def adamw(named_params: Iterable[tuple[str, "torch.nn.Parameter"]], *, lr: float, weight_decay: float,
          betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> "torch.optim.AdamW":
    """AdamW over ``named_params`` with weight decay on matrices only (:func:`decay_groups`)."""
    import torch  # lazy: CLI start-up (torch)

    return torch.optim.AdamW(decay_groups(named_params, weight_decay), lr=lr, betas=betas, eps=eps)


# ---------------------------------------------------------------- checkpoints


def optimizer_tensors(module: "torch.nn.Module", opt: "torch.optim.Optimizer") -> dict[str, "torch.Tensor"]:
    """``{"<param name>::<key>": tensor}`` for every optimizer state entry (``step`` included), on CPU."""
    import torch  # lazy: CLI start-up (torch)

    out: dict[str, torch.Tensor] = {}
    for name, p in module.named_parameters():
        for key, value in opt.state.get(p, {}).items():
            out[f"{name}::{key}"] = torch.as_tensor(value).detach().cpu().clone().contiguous()
    return out


def save_checkpoint(folder: str | Path, module: "torch.nn.Module", opt: "torch.optim.Optimizer | None",
                    state: dict[str, Any]) -> None:
    """Write weights, optimizer state and the JSON ``state`` to ``folder`` atomically (temp folder, then swap)."""
    from safetensors.torch import save_file, save_model  # lazy: CLI start-up (safetensors)

    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_model(module, str(tmp / "model.safetensors"))  # tied weights (lm_head = embeddings) stored once
    save_file(optimizer_tensors(module, opt) if opt is not None else {}, str(tmp / "optimizer.safetensors"))
    atomic_write_json(tmp / "state.json", state)
    replace_dir(tmp, folder)


def checkpoint_state(folder: str | Path) -> dict[str, Any] | None:
    """The JSON state of the checkpoint in ``folder``, or None when there is none (nothing is loaded)."""
    p = Path(folder) / "state.json"
    return json.loads(p.read_text()) if p.is_file() else None


def load_optimizer(folder: str | Path, module: "torch.nn.Module", opt: "torch.optim.Optimizer") -> None:
    """Restore the optimizer state of a checkpoint into ``opt`` (matched by parameter name)."""
    from safetensors.torch import load_file  # lazy: CLI start-up (safetensors)

    by_name: dict[str, dict[str, Any]] = {}
    for key, value in load_file(str(Path(folder) / "optimizer.safetensors")).items():
        name, k = key.split("::", 1)
        by_name.setdefault(name, {})[k] = value
    for name, p in module.named_parameters():
        if name in by_name:
            opt.state[p] = {k: v.to(p.device) if k != "step" else v for k, v in by_name[name].items()}


def load_checkpoint(folder: str | Path, module: "torch.nn.Module", opt: "torch.optim.Optimizer | None" = None) -> dict[str, Any]:
    """Load a checkpoint's weights into ``module`` (and its optimizer state into ``opt``); returns its JSON state."""
    from safetensors.torch import load_model  # lazy: CLI start-up (safetensors)

    folder = Path(folder)
    state = checkpoint_state(folder)
    if state is None:
        raise ThinklensError.of("checkpoint", str(folder), "a folder written by save_checkpoint (with state.json)",
                                "delete the folder to start over")
    load_model(module, str(folder / "model.safetensors"), strict=True, device=str(next(module.parameters()).device))
    if opt is not None:
        load_optimizer(folder, module, opt)
    return state


# ---------------------------------------------------------------- Accelerate


def make_accelerator(device: str = "cpu") -> Any:
    """An ``accelerate.Accelerator``: CPU processes for ``device="cpu"``, else one accelerator per process.

    Under ``accelerate launch`` or torchrun (their environment variables) it joins the process group, so
    the same script trains on one CPU, several CPU processes (gloo) or several GPUs.
    """
    from accelerate import Accelerator  # lazy: CLI start-up (accelerate)

    return Accelerator(cpu=str(device) == "cpu")


def prepare_module(acc: Any, module: "torch.nn.Module") -> "torch.nn.Module":
    """``module`` wrapped for data-parallel training when there are several processes, else itself."""
    return acc.prepare_model(module) if acc.num_processes > 1 else module


def mean_over_processes(acc: Any, values: dict[str, "torch.Tensor"]) -> dict[str, float]:
    """Each scalar averaged over the processes (the same numbers on every rank), as floats for logging."""
    return {key: float(acc.reduce(v.detach().float(), "mean")) for key, v in values.items()}


def launched_rank() -> int:
    """This process's rank in the launch, from the ``RANK`` that accelerate launch / torchrun set (0 when absent)."""
    try:
        return max(0, int(os.environ.get("RANK", "0")))
    except ValueError:
        return 0


def launched_world_size() -> int:
    """Processes of this launch, from the ``WORLD_SIZE`` that accelerate launch / torchrun set (1 when absent)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def close_process_group() -> None:
    """Leave the launch's process group while the interpreter is still whole.

    Gloo's worker threads that outlive the interpreter's finalization abort the process (SIGABRT) now and
    then, after its work is done and its results are written; a relaunch then reads as a crash. Runs at
    exit of every process that joined a group through :func:`shared_run_folder`; a no-op when none is open.
    """
    import torch.distributed as dist  # lazy: CLI start-up (torch)

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def shared_run_folder(create: Callable[[], "RunFolder"], *, cpu: bool = True) -> "RunFolder":
    """The one run folder of a multi-process launch: rank 0 runs ``create`` (the resume check, config.json),
    the other ranks open the folder it made. One process: ``create()``.

    Every rank opening its own folder breaks as soon as the ranks disagree on the path (a timestamp id,
    another working directory or runs root); this way they cannot.

    Args:
        create: makes or reopens the run folder (called on rank 0 only).
        cpu: join the process group on CPU (gloo) rather than the accelerators.
    """
    if launched_world_size() <= 1:
        return create()
    import torch.distributed as dist  # lazy: CLI start-up (torch)
    from accelerate import PartialState  # lazy: CLI start-up (accelerate)

    state = PartialState(cpu=cpu)  # joins the launch's process group (the trainer's Accelerator reuses it)
    atexit.unregister(close_process_group)  # one registration however many jobs this process runs
    atexit.register(close_process_group)
    box: list[Any] = [None]
    error: BaseException | None = None
    if state.is_main_process:
        try:
            box = [str(create().path)]
        except BaseException as e:  # the other ranks must not wait forever for a path
            box, error = [{"error": str(e)}], e
    dist.broadcast_object_list(box, src=0)
    if error is not None:
        raise error
    if isinstance(box[0], dict):
        raise ThinklensError.of("run folder", "none (rank 0 failed)", "a folder opened by rank 0", box[0]["error"])
    return RunFolder.open(box[0])
