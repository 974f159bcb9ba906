"""A job's policy as a PEFT LoRA adapter directory, written by SkyRL's own writer.

SkyRL's backends write their sampler checkpoint with ``save_sampler_checkpoint(path, model_id,
persist=True)``: the JAX engines a tar.gz of a PEFT adapter (``adapter_model.safetensors`` with
PEFT's key names, ``adapter_config.json`` with the base model's path, rank and alpha: its
``save_lora_checkpoint``), the GPU trainer a tar of the PEFT adapter it syncs to vLLM. That archive is
unpacked into the adapter directory; nothing of the weights is rewritten here.

One thing is added to SkyRL's ``adapter_config.json``: its ``target_modules`` is null, which PEFT
reads as "the model type's defaults" (``q_proj``, ``v_proj`` for Qwen) and then silently drops the
adapter's other modules' weights; the modules are named from the adapter file's own keys. A
``task_type`` of ``CAUSAL_LM`` is added where absent, so ``AutoPeftModelForCausalLM`` loads it too.

    exporter = PolicyExporter(JobPaths(job_dir), policy, metric, goal, earlier)
    exporter.on_validation(metrics)        # a better validation: export/best/ now
    exporter.export_final(step)            # training ended: export/final/
    exporter.exports                       # result.json's record of them
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tarfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from rllm_sweeps.records.layout import BEST_POLICY, FINAL_POLICY, JobPaths
from rllm_sweeps.records.result import ExportedPolicy, PolicyExports
from rllm_sweeps.training.policy import Policy

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
_LORA_KEY_PARTS = ("lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B")


def write_adapter(policy: Policy, out: Path) -> Path:
    """The policy's weights now, as an adapter directory `out` (replaced whole: written beside and
    renamed, so a reader never sees half of one)."""
    tmp = out.with_name(out.name + ".tmp")
    archive = out.with_name(out.name + ".tar.gz")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        policy.save_sampler_weights(archive)  # SkyRL's writer
        tmp.mkdir(parents=True)
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(tmp, filter="data")
        complete_adapter_config(tmp)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        archive.unlink(missing_ok=True)
        archive.with_name(archive.name + ".probe").unlink(missing_ok=True)  # RayJaxBackend's shared-disk probe
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def complete_adapter_config(adapter_dir: Path) -> None:
    """Name the adapter's target modules (from its weights' keys) and its task type, where SkyRL's
    config leaves them out (the module docstring says why)."""
    config_path = adapter_dir / ADAPTER_CONFIG
    if not config_path.is_file():
        return  # not an adapter (SkyRL's GPU trainer without LoRA exports a whole model)
    config = json.loads(config_path.read_text())
    if not config.get("target_modules"):
        config["target_modules"] = sorted(adapted_modules(adapter_dir / ADAPTER_WEIGHTS))
    config["task_type"] = config.get("task_type") or "CAUSAL_LM"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def adapted_modules(weights: Path) -> set[str]:
    """The module names an adapter file has LoRA weights for: `...layers.0.mlp.up_proj.lora_A.weight`
    -> `up_proj`."""
    from safetensors import safe_open

    with safe_open(str(weights), framework="numpy") as f:
        keys = list(f.keys())
    names = set()
    for key in keys:
        parts = key.split(".")
        for i, part in enumerate(parts):
            if part in _LORA_KEY_PARTS and i > 0:
                names.add(parts[i - 1])
    return names


class PolicyExporter:
    """One job's exported policies: the best by its judged metric, at each validation after a
    training step that beats the ones before, and the final one when training ends.

    Args:
        paths: the job's directory.
        policy: the loop's policy.
        metric, goal: the metric the job is judged by (the sweep's first) and its goal.
        earlier: what an earlier attempt of this job exported (a resumed job keeps its best when it
            came at or before the checkpoint it resumes from).
        resumed_step: the step it resumes from (0: a fresh start).
    """

    def __init__(
        self,
        paths: JobPaths,
        policy: Policy,
        metric: str,
        goal: str,
        earlier: PolicyExports | None = None,
        resumed_step: int = 0,
    ) -> None:
        self.paths, self.policy, self.metric, self.goal = paths, policy, metric, goal
        best = earlier.best if earlier is not None else None
        if best is None or best.step > resumed_step or not (paths.root / best.path).is_dir():
            best = None
            shutil.rmtree(paths.exported(BEST_POLICY), ignore_errors=True)
        self.exports = PolicyExports(best=best)

    def on_validation(self, metrics: dict[str, Any]) -> None:
        """After a validation: export the policy as the best when it beats the best so far. The
        validation before training is no candidate: its policy is the base model itself."""
        step, value = int(metrics["step"]), metrics.get(self.metric)
        if step <= 0 or not isinstance(value, int | float) or not math.isfinite(value):
            return
        best = self.exports.best
        if best is not None and best.value is not None and not self._better(float(value), best.value):
            return
        write_adapter(self.policy, self.paths.exported(BEST_POLICY))
        self.exports = replace(self.exports, best=self._record(BEST_POLICY, step, float(value)))

    def export_final(self, step: int) -> PolicyExports:
        """Training ended (completed, pruned, or stopped at a step boundary): export/final/. Before any
        training step the policy is the base model: nothing to export."""
        if step <= 0:
            self.exports = replace(self.exports, not_exported="no training step ran: the policy is the base model")
            return self.exports
        write_adapter(self.policy, self.paths.exported(FINAL_POLICY))
        self.exports = replace(self.exports, final=self._record(FINAL_POLICY, step))
        return self.exports

    def _better(self, a: float, b: float) -> bool:
        return a > b if self.goal == "maximize" else a < b

    def _record(self, which: str, step: int, value: float | None = None) -> ExportedPolicy:
        path = self.paths.exported(which).relative_to(self.paths.root).as_posix()
        metric = self.metric if which == BEST_POLICY else None
        return ExportedPolicy(path=path, step=step, metric=metric, value=value)


def discard_exports(paths: JobPaths, why: str) -> PolicyExports:
    """A job whose policy must not be used (its training diverged): no export stays, and the record
    says why."""
    shutil.rmtree(paths.export, ignore_errors=True)
    return PolicyExports(not_exported=why)


__all__ = [
    "ADAPTER_CONFIG",
    "ADAPTER_WEIGHTS",
    "PolicyExporter",
    "adapted_modules",
    "complete_adapter_config",
    "discard_exports",
    "write_adapter",
]
