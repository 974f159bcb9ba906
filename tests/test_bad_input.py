"""Bad input a newcomer types: one line, exit code 2, no traceback, and what to write instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rllm_sweeps.config.rules import name_max, path_name
from rllm_sweeps.sweep.parse_cli import anchor_cycle

REPO = Path(__file__).resolve().parents[1]
CYCLE = "method: grid\nparameters:\n  trainer.lr: &a\n    values: [1, *a]\n"


def train(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "RLLM_SWEEPS_WARM_SERVER": "off"}
    return subprocess.run(
        [sys.executable, str(REPO / "train.py"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    (line,) = [line for line in proc.stderr.strip().splitlines() if not line.startswith("note:")]
    assert line.startswith("error: ")
    return line


def test_a_directory_name_longer_than_the_file_system_takes_is_refused_at_validation():
    limit = name_max() - len("-12345678")  # room for the sweep id of a sweep directory
    assert path_name("x" * limit) is None
    assert f"at most {limit} bytes" in path_name("x" * (limit + 1))


def test_a_yaml_anchor_that_contains_its_own_alias_is_named_with_its_line(tmp_path):
    (tmp_path / "cycle.yaml").write_text(CYCLE)
    (tmp_path / "fine.yaml").write_text("a: &x {b: 1}\nc: *x\n")
    assert anchor_cycle(tmp_path / "cycle.yaml").startswith("line 4: the alias *a is inside the node it names")
    assert anchor_cycle(tmp_path / "fine.yaml") is None


@pytest.mark.slow
def test_config_group_typos_name_the_choices_with_a_did_you_mean_for_a_job_and_a_sweep(tmp_path):
    line = one_error_line(train(tmp_path, "workflow=multiturn"))
    assert "there is no workflow 'multiturn'" in line and "multi_turn, single_turn, solver_judge" in line
    assert "did you mean 'multi_turn'?" in line
    line = one_error_line(train(tmp_path, "-m", "+sweep=lr_gird"))
    assert "there is no sweep 'lr_gird'" in line and "did you mean 'lr_grid'" in line
    line = one_error_line(train(tmp_path, "-m", "task=toy_letters,nonexistent"))
    assert "there is no task 'nonexistent'" in line and "gsm8k" in line


@pytest.mark.slow
def test_names_too_long_and_a_sweep_file_that_refers_to_itself_are_one_line_each(tmp_path):
    long = "x" * 300
    assert "at most" in one_error_line(train(tmp_path, f"trainer.project_name={long}"))  # a directory of outputs/
    dry = ["-m", "trainer.lr=1e-3,2e-3", "hydra.sweeper.dry_run=true"]
    assert "at most" in one_error_line(train(tmp_path, *dry, f"sweep.name={long}"))
    (tmp_path / "cycle.yaml").write_text(CYCLE)
    line = one_error_line(train(tmp_path, "-m", "+sweep=cycle.yaml"))
    assert "cycle.yaml: line 4: the alias *a" in line
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "multirun").exists()


def test_a_missing_or_corrupt_data_file_is_a_config_problem_a_good_one_is_not(tmp_path):
    from rllm_sweeps.config.data_files import data_file_issues

    (tmp_path / "good.jsonl").write_text('{"question": "1+1?", "answer": "#### 2"}\n')
    (tmp_path / "bad.jsonl").write_text("not json\n")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 and then nothing")

    def problem(path: Path) -> str:
        issues = data_file_issues({"task": {"dataset": {"path": str(path), "val_size": 4}}})
        return " ".join(i.message for i in issues)

    assert problem(tmp_path / "good.jsonl") == ""
    assert "there is no file" in problem(tmp_path / "missing.jsonl")
    assert "line 1 is not JSON" in problem(tmp_path / "bad.jsonl")
    assert "not a readable parquet file" in problem(tmp_path / "bad.parquet")
    assert data_file_issues({"task": {"dataset": {"path": None}}}) == []  # the task's bundled sample


def test_an_empty_sweep_file_is_an_error_not_one_default_job(tmp_path):
    from rllm_sweeps.sweep.parse_cli import load_sweep_file
    from rllm_sweeps.sweep.spec import SweepError

    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    with pytest.raises(SweepError, match="the sweep file is empty"):
        load_sweep_file(tmp_path / "empty.yaml")


@pytest.mark.slow
def test_the_dry_run_refuses_a_missing_data_file_and_a_plus_key_nothing_reads(tmp_path):
    dry = ["-m", "task=gsm8k", "hydra.sweeper.dry_run=true"]  # one job: one line
    line = one_error_line(train(tmp_path, *dry, "task.dataset.path=missing.jsonl"))
    assert "task.dataset.path='missing.jsonl' is invalid: there is no file" in line
    line = one_error_line(train(tmp_path, "-m", "+trainer.lrr=1e-3,3e-3", "hydra.sweeper.dry_run=true"))
    assert "unknown key 'trainer.lrr'; did you mean 'trainer.lr'" in line
    assert not (tmp_path / "multirun").exists()


def test_a_model_path_that_is_a_file_says_it_is_a_file_not_that_it_does_not_exist(tmp_path):
    from rllm_sweeps.config.rules import model_path

    (tmp_path / "model.safetensors").write_bytes(b"\0")
    problem = model_path(str(tmp_path / "model.safetensors"))
    assert "is a file" in problem and "there is no" not in problem


def test_a_comma_list_without_m_is_one_line_rc_2_did_you_mean_m_in_train_validate_and_cfg_job(tmp_path):
    for args in (["trainer.lr=1e-3,3e-3"], ["trainer.lr=1e-3,3e-3", "--cfg", "job"]):
        line = one_error_line(train(tmp_path, *args))
        assert "trainer.lr=1e-3,3e-3 is a sweep" in line and "did you mean -m?" in line
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "validate", "rollout.n=4,8"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "rollout.n=4,8 is a sweep" in one_error_line(proc) and "did you mean -m?" in proc.stderr


def test_a_plus_key_nothing_reads_is_refused_by_a_single_job_validate_and_cfg_job_as_by_a_sweep(tmp_path):
    for args in (["+trainer.foo=1"], ["+trainer.foo=1", "--cfg", "job"]):
        assert "unknown key 'trainer.foo'" in one_error_line(train(tmp_path, *args))
    assert not (tmp_path / "outputs").exists()
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.problems import ConfigError

    with pytest.raises(ConfigError, match="nothing reads a trainer"):
        load_config(["+trainer.foo=1"], notify=lambda _: None)
    assert load_config(["+task.extra=1"], notify=lambda _: None).task.extra == 1  # a task's code may read it
