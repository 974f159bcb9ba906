"""W&B sweep-file fields, as W&B's docs write them, in this project's sweep terms.

A W&B sweep file is a sweep file here (method, metric, parameters, run_cap are the same
settings). What W&B has besides is translated where a setting here means the same, with a note:

- ``method: bayes`` -> ``method: optuna`` with the TPE sampler (Optuna's Bayesian optimiser);
- ``early_terminate: {type: hyperband, min_iter | max_iter + s, eta}`` -> Optuna's
  SuccessiveHalvingPruner: W&B's hyperband stopping has one set of brackets (min_iter x eta^k, or
  max_iter / eta^s ... max_iter / eta) and stops a run below the top 1/eta of the values at a
  bracket, which is successive halving (``min_resource`` = the first bracket, ``reduction_factor``
  = eta); Optuna's HyperbandPruner would split the runs among several such sets. Pruning runs through Optuna,
  so a grid or random sweep with early termination runs as ``method: optuna`` with the grid or
  random sampler: a grid runs every point once (its budget is its size), a random one needs run_cap;
- ``program``, ``command``, ``project``, ``entity``: how W&B's agent launches runs; here train.py
  runs every job and ``trainer.project_name`` names the tracker project: ignored, with one note.

What has no meaning here is refused with what to write instead (W&B's ``metric.target``).
`docs_table()` is docs/SWEEPS.md's "W&B field -> what it becomes" table: these fields (`FIELD_ROWS`)
and every distribution name (sweep/distributions.py); ``python -m rllm_sweeps.sweep.wandb_fields
--write`` writes it between its markers.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rllm_sweeps.doc_table import between_markers
from rllm_sweeps.sweep.distributions import doc_rows

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
    options = _brackets(early, where, problem)
    if options is None:
        return
    method = out.get("method", "grid")
    optuna = dict(out.get("optuna") or {})
    if optuna.get("pruner") not in (None, "hyperband"):
        problem(where, f"early_terminate and optuna.pruner={optuna['pruner']} both choose the pruner: keep one")
        return
    if method in ("grid", "random"):
        optuna.setdefault("sampler", method)
        # A grid's size is known: its Optuna run asks every point once (parse_file sets the budget); a
        # random one needs run_cap as any sampling sweep (parse_file says so).
        note(f"{where}: pruning runs through Optuna: method {method} runs as method optuna with the {method} sampler")
        out["method"] = "optuna"
    optuna["pruner"] = "asha"
    optuna["pruner_options"] = {**options, **dict(optuna.get("pruner_options") or {})}
    out["optuna"] = optuna
    ignored = [k for k in ("strict",) if k in early]
    detail = f"; {', '.join(ignored)} ignored (no Optuna counterpart)" if ignored else ""
    note(
        f"{where}: W&B's hyperband stopping (a run below the top 1/eta at a bracket stops; brackets "
        f"min_iter x eta^k) is Optuna's SuccessiveHalvingPruner with {options}{detail}"
    )


def _brackets(early: Mapping[str, Any], where: str, problem: Callable[[str, str], None]) -> dict[str, Any] | None:
    """SuccessiveHalvingPruner's options of W&B's brackets: min_iter, min_iter x eta, ... or, with
    max_iter and s, max_iter / eta**s, ..., max_iter / eta (W&B's sweeps, hyperband_stopping.py)."""
    eta = early.get("eta", 3)  # W&B's default
    bad = [
        f"{k}={early[k]!r}"
        for k, low in (("eta", 2), ("min_iter", 1), ("max_iter", 1), ("s", 1))
        if k in early and not (isinstance(early[k], int) and not isinstance(early[k], bool) and early[k] >= low)
    ]
    if bad:
        problem(where, f"{', '.join(bad)}: hyperband's min_iter, max_iter and s are integers >= 1, eta >= 2")
        return None
    if "max_iter" in early and "s" in early:  # W&B reads max_iter first
        band, bands = float(early["max_iter"]), []
        for _ in range(early["s"]):  # as W&B: max_iter / eta, / eta**2, ... while at least 1
            band /= eta
            if band < 1:
                break
            bands.append(int(band))
        if not bands:
            problem(where, f"max_iter / eta = {early['max_iter']} / {eta} < 1: no bracket; raise max_iter or lower eta")
            return None
        first = min(bands)
    elif "min_iter" in early:
        first = early["min_iter"]
    elif "max_iter" in early:
        problem(where, "hyperband with max_iter needs s, the number of brackets (as in W&B): e.g. s: 2")
        return None
    else:
        problem(where, "hyperband needs min_iter, or max_iter and s (validation rounds, as W&B counts iterations)")
        return None
    return {"min_resource": first, "reduction_factor": eta, "min_early_stopping_rate": 0}


# (W&B field, what W&B does with it, what it becomes here): the docs table's rows besides the distributions.
FIELD_ROWS: tuple[tuple[str, str, str], ...] = (
    ("`method: grid` / `random`", "every combination / random draws", "the same method"),
    (
        "`method: bayes`",
        "Bayesian optimisation",
        "`method: optuna` with the TPE sampler (Optuna's Bayesian optimiser)",
    ),
    ("`metric: {name, goal}`", "the metric to optimise", "the same; a metric the jobs report"),
    ("`metric.target`", "no new runs once a run reaches it", "refused: bound the sweep with `budget` / `run_cap`"),
    ("`parameters` (nested too)", "the search space", "the same; `key: {parameters: {sub: ...}}` is `key.sub`"),
    ("`run_cap`", "the most runs", "`budget` (jobs)"),
    (
        "`early_terminate: {type: hyperband, min_iter, eta}`",
        "brackets at min_iter x eta^k; a run below the top 1/eta of the values logged at a bracket stops",
        "Optuna's `SuccessiveHalvingPruner(min_resource=min_iter, reduction_factor=eta)`; `method: grid` runs "
        "as `method: optuna` with the grid sampler, every point once (no `run_cap` needed); `random` with the "
        "random sampler (`run_cap` needed)",
    ),
    (
        "`early_terminate: {type: hyperband, max_iter, s, eta}`",
        "brackets at max_iter / eta^s, ..., max_iter / eta",
        "the same pruner, `min_resource` = the smallest bracket (W&B reads `max_iter` before `min_iter`); "
        "Optuna's rungs go on past max_iter / eta",
    ),
    ("`early_terminate.strict`", "", "ignored, with a note"),
    ("another `early_terminate` type", "", "refused: W&B's is hyperband"),
    (
        "`program`, `command`, `project`, `entity`",
        "how W&B's agent launches runs",
        "ignored with one note: train.py runs every job; `trainer.project_name` names the tracker project",
    ),
)


def docs_table() -> str:
    """docs/SWEEPS.md's "W&B field -> what it becomes" table."""
    lines = ["| W&B field | W&B's meaning | here |", "|---|---|---|"]
    lines += [f"| {field} | {meaning} | {here} |" for field, meaning, here in FIELD_ROWS]
    lines += [f"| `distribution: {name}` | {meaning} | {here} |" for name, meaning, here in doc_rows()]
    return "\n".join(lines)


DOC = Path("docs/SWEEPS.md")  # the checkout's, relative to its root (where a developer writes it)
MARK_BEGIN = "<!-- W&B table: python -m rllm_sweeps.sweep.wandb_fields --write -->"
MARK_END = "<!-- end of the W&B table -->"


def with_table(doc: str, table: str) -> str:
    """`doc` with the text between the markers replaced by `table`."""
    return between_markers(doc, MARK_BEGIN, MARK_END, table + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    DOC.write_text(with_table(DOC.read_text(), docs_table()))

__all__ = ["FIELD_ROWS", "LAUNCH_FIELDS", "docs_table", "translate_wandb_fields", "with_table"]
