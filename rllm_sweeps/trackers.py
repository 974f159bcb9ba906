"""Where a job's metrics go besides metrics.jsonl: console, TensorBoard, W&B (`trainer.logger`)."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any, Protocol

from rllm_sweeps.records.metrics import DEFAULT_METRIC


class Tracker(Protocol):
    def log(self, metrics: dict[str, Any], step: int) -> None: ...
    def close(self) -> None: ...


class ConsoleProgress:
    """One line per step with reward, loss and ETA; one per validation."""

    def __init__(self, total_steps: int, first_step: int = 0, stream: Any = sys.stdout) -> None:
        self.total_steps = total_steps
        self.first_step = first_step
        self.stream = stream
        self.started = time.monotonic()

    def log(self, metrics: dict[str, Any], step: int) -> None:
        if DEFAULT_METRIC in metrics:
            line = f"[val]  step {step:>4}/{self.total_steps}  val_reward {metrics[DEFAULT_METRIC]:.3f}"
            # A workflow of several roles (solver-judge): each role's accuracy, as result.json has it.
            roles = sorted(k for k in metrics if k.startswith("val_") and k.endswith("_acc"))
            if len(roles) > 1:
                line += "".join(f"  {k.removeprefix('val_')} {metrics[k]:.3f}" for k in roles)
        else:
            done = step - self.first_step
            per_step = (time.monotonic() - self.started) / max(done, 1)
            eta = per_step * (self.total_steps - step)
            line = (
                f"[train] step {step:>4}/{self.total_steps}  reward {metrics['reward_mean']:.3f}"
                f"±{metrics['reward_std']:.3f}  loss {metrics['loss']:+.4f}  lr {metrics['lr']:.2e}"
                f"  {metrics['time_step_s']:.2f}s/step  ETA {clock(eta)}"
            )
            if "skipped" in metrics:
                line += f"  skipped: {metrics['skipped']}"
        print(line, file=self.stream, flush=True)

    def close(self) -> None:
        pass


class TensorBoardTracker:
    def __init__(self, log_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))

    def log(self, metrics: dict[str, Any], step: int) -> None:
        for key, value in metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    """W&B; runs offline (no key, no network) unless WANDB_MODE says otherwise."""

    def __init__(self, job_dir: Path, project: str, name: str, config: dict[str, Any]) -> None:
        import os

        import wandb

        os.environ.setdefault("WANDB_MODE", "offline")
        self.run = wandb.init(project=project, name=name, dir=str(job_dir), config=config, resume="allow")

    def log(self, metrics: dict[str, Any], step: int) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


def make_trackers(
    names: list[str], job_dir: Path, total_steps: int, first_step: int, project: str, run_name: str, config: dict
) -> list[Tracker]:
    trackers: list[Tracker] = []
    for name in names:
        if name == "console":
            trackers.append(ConsoleProgress(total_steps, first_step))
        elif name == "tensorboard":
            trackers.append(TensorBoardTracker(job_dir / "tensorboard"))
        elif name == "wandb":
            trackers.append(WandbTracker(job_dir, project, run_name, config))
    return trackers


def clock(seconds: float) -> str:
    """H:MM:SS"""
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
