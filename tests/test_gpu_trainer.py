"""SkyRL's GPU trainer (skyrl.engine=fsdp) trains through the same loop: two steps, end to end.

Runs where CUDA, vLLM and flash-attn import (a GPU cluster with `pip install -e '.[fsdp]'`);
skipped elsewhere. Not yet run by this project: no machine it has used had vLLM (see
docs/BENCHMARKS.md).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.results import JobResult, read_metrics

REPO = Path(__file__).resolve().parents[1]


def _gpu_trainer_available() -> bool:
    if any(importlib.util.find_spec(m) is None for m in ("vllm", "flash_attn")):
        return False
    import torch

    return torch.cuda.is_available()


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _gpu_trainer_available(), reason="needs CUDA, vllm and flash_attn (pip install '.[fsdp]')"),
]


def test_two_training_steps_of_the_default_loop_on_skyrls_fsdp_trainer(tmp_path):
    job = tmp_path / "job"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "train.py"),
            "skyrl.engine=fsdp",
            "resources.gpus_per_node=1",
            "trainer.total_batches=2",
            "trainer.test_freq=2",
            "trainer.save_freq=2",
            "task.dataset.val_size=8",
            f"hydra.run.dir={job}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    result = JobResult.read(job)
    assert result.status == "completed" and result.steps == 2
    assert result.backend == "SkyRLTrainBackend" and result.engine == "fsdp"
    steps = [r for r in read_metrics(job) if r["kind"] == "train"]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(r["tokens_trained"] > 0 for r in steps)
