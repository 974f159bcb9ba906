"""W&B sweep-file fields, as W&B's docs write them, in this project's sweep terms.

A W&B sweep file is a sweep file here (method, metric, parameters, run_cap are the same
settings). What W&B has besides is translated where a setting here means the same, with a note:

- ``method: bayes`` -> ``method: optuna`` with the TPE sampler (Optuna's Bayesian optimiser);
- ``early_terminate: {type: hyperband, min_iter | max_iter, eta, s}`` -> Optuna's Hyperband pruner
  (``min_resource``, ``max_resource``, ``reduction_factor``; W&B's ``s`` brackets give
  ``min_iter = max_iter / eta**s`` when only ``max_iter`` is given). Pruning runs through Optuna,
  so a grid or random sweep with early termination runs as ``method: optuna`` with the grid or
  random sampler;
- ``program``, ``command``, ``project``, ``entity``: how W&B's agent launches runs; here train.py
  runs every job and ``trainer.project_name`` names the tracker project: ignored, with one note.

What has no meaning here is refused with what to write instead (W&B's ``metric.target``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

LAUNCH_FIELDS = ("program", "command", "project", "entity")
_HYPERBAND_FIELDS = {"type", "min_iter", "max_iter", "eta", "s", "strict"}


def translate_wandb_fields(
    data: Mapping[str, Any],
    source: str,
    problem: Callable[[str, str], None],
    note: Callable[[str], None],
) -> dict[str, Any]:
    """The sweep node with W&B's own fields turned into this project's settings."""
    out = dict(data)
    launch = [k for k in LAUNCH_FIELDS if k in out]
    for key in launch:
        del out[key]
    if launch:
        note(
            f"{source}: {', '.join(launch)} ignored: W&B's agent settings; here train.py runs every job "
            "and trainer.project_name names the tracker project"
        )
    metric = out.get("metric")
    if isinstance(metric, Mapping) and "target" in metric:
        problem(
            f"{source}: metric.target",
            "W&B's metric.target (stop the sweep once a run reaches it) has no equivalent here: remove it "
            "and bound the sweep with budget (or run_cap)",
        )
        out["metric"] = {k: v for k, v in metric.items() if k != "target"}
    if out.get("method") == "bayes":
        out["method"] = "optuna"
        out["optuna"] = {"sampler": "tpe", **dict(out.get("optuna") or {})}
        note(f"{source}: method bayes runs as method optuna with the TPE sampler (Optuna's Bayesian optimiser)")
    early = out.pop("early_terminate", None)
    if early is not None:
        _early_terminate(out, early, f"{source}: early_terminate", problem, note)
    return out


def _early_terminate(
    out: dict[str, Any], early: Any, where: str, problem: Callable[[str, str], None], note: Callable[[str], None]
) -> None:
    if not isinstance(early, Mapping) or early.get("type") != "hyperband":
        problem(where, "W&B's early_terminate is {type: hyperband, min_iter or max_iter, eta, s}")
        return
    unknown = sorted(set(early) - _HYPERBAND_FIELDS)
    if unknown:
        problem(where, f"unknown field(s) {', '.join(unknown)}; W&B's hyperband takes min_iter, max_iter, eta, s")
        return
    eta = early.get("eta", 3)  # W&B's default
    options: dict[str, Any] = {"reduction_factor": eta}
    if "min_iter" in early:
        options["min_resource"] = early["min_iter"]
    if "max_iter" in early:
        options["max_resource"] = early["max_iter"]
        if "min_iter" not in early and isinstance(early.get("s"), int) and isinstance(eta, int) and eta > 1:
            options["min_resource"] = max(1, early["max_iter"] // eta ** early["s"])
    if "min_resource" not in options and "max_resource" not in options:
        problem(where, "hyperband needs min_iter or max_iter (validation rounds, as W&B counts iterations)")
        return
    method = out.get("method", "grid")
    optuna = dict(out.get("optuna") or {})
    if optuna.get("pruner") not in (None, "hyperband"):
        problem(where, f"early_terminate and optuna.pruner={optuna['pruner']} both choose the pruner: keep one")
        return
    if method in ("grid", "random"):
        if out.get("budget") is None and out.get("run_cap") is None:
            problem(
                where,
                f"pruning runs through Optuna, which runs a set number of jobs: add run_cap (for method "
                f"{method}, the number of jobs; a grid's size runs it whole)",
            )
            return
        optuna.setdefault("sampler", method)
        note(f"{where}: pruning runs through Optuna: method {method} runs as method optuna with the {method} sampler")
        out["method"] = "optuna"
    optuna["pruner"] = "hyperband"
    optuna["pruner_options"] = {**options, **dict(optuna.get("pruner_options") or {})}
    out["optuna"] = optuna
    dropped = [k for k in ("s", "strict") if k in early]
    detail = f"; {', '.join(dropped)} ignored (Optuna derives the brackets from the resources)" if dropped else ""
    note(f"{where}: Optuna's Hyperband pruner with {options}{detail}")


__all__ = ["LAUNCH_FIELDS", "translate_wandb_fields"]
