"""Optuna through its public API: a trial is made from its id in one place (rllm_sweeps/study.py's
live_trial, which says why), and no private attribute of Optuna's objects is read anywhere."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRIAL_HOME = "rllm_sweeps/study.py"
OPTUNA_PRIVATE = ("_trial_id", "_study_id", "_storage")


def optuna_private_uses(source: str) -> list[str]:
    """`optuna.trial.Trial(...)` calls and reads of Optuna's private attributes, as 'line: text'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("optuna.trial.Trial", "Trial"):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}(...)")
        elif isinstance(node, ast.Attribute) and node.attr in OPTUNA_PRIVATE:
            found.append(f"{node.lineno}: .{node.attr}")
    return found


def test_optuna_is_used_through_its_public_api():
    offenders = []
    for package in ("rllm_sweeps", "launchers", "hydra_plugins"):
        for path in sorted((REPO / package).rglob("*.py")):
            where = str(path.relative_to(REPO))
            uses = optuna_private_uses(path.read_text())
            if where == TRIAL_HOME:
                uses = [u for u in uses if not u.endswith("optuna.trial.Trial(...)")]
            offenders += [f"{where}:{u}" for u in uses]
    assert offenders == [], f"use Optuna's public API, or study.live_trial: {offenders}"


def test_the_optuna_finder_finds_a_trial_made_by_hand_and_a_private_id():
    source = "t = optuna.trial.Trial(study, frozen._trial_id)\n"
    assert optuna_private_uses(source) == ["1: optuna.trial.Trial(...)", "1: ._trial_id"]
