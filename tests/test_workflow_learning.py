"""The shipped workflows learn on the tiny model (2 CPUs), through train.py with no other argument
than the workflow (and a shorter run where the margins allow it); skyrl-gym's own GSM8K
environment runs through the multi-turn path; a workflow written as docs/WORKFLOWS.md shows trains.

Margins measured first (seed 42, 2 CPUs; docs/BENCHMARKS.md, "Workflows"):
- multi_turn, 20 steps: val reward 0.004 -> 0.750 with 2 turns, 0.003 -> 0.192 with max_turns=1;
- solver_judge, the default (30 steps, lr 1e-3): val_solver_acc 0.0 -> 1.0, val_judge_acc 0.0 -> 0.781;
  with lr 3e-3, 20 steps (the test): 0.0 -> 0.938 and 0.0 -> 0.938. The test's run is also
  preempted after its step-10 checkpoint and resumed: the job's preemption and resume on a real run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def train(job_dir: Path, *overrides: str, timeout: float = 600, pythonpath: str = "") -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), pythonpath) if p)}
    proc = subprocess.run(
        [sys.executable, "train.py", *overrides, f"hydra.run.dir={job_dir}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert JobResult.read(job_dir).status == "completed"


def validations(job_dir: Path) -> list[dict]:
    return [r for r in read_metrics(job_dir) if r["kind"] == "val"]


def gain(job_dir: Path, metric: str) -> float:
    vals = validations(job_dir)
    return vals[-1][metric] - vals[0][metric]


def test_multi_turn_default_learns_and_one_turn_learns_measurably_less(tmp_path):
    short = ["trainer.total_batches=20", "trainer.test_freq=20", "trainer.save_freq=-1"]
    train(tmp_path / "two", "workflow=multi_turn", *short)
    train(tmp_path / "one", "workflow=multi_turn", "workflow.max_turns=1", *short)
    two, one = gain(tmp_path / "two", "val_reward_mean"), gain(tmp_path / "one", "val_reward_mean")
    assert two >= 0.45, validations(tmp_path / "two")
    assert one <= 0.35, validations(tmp_path / "one")
    assert two - one >= 0.3
    last = validations(tmp_path / "two")[-1]
    assert last["val_turns_mean"] > 1.0  # wrong guesses got a second turn
    assert validations(tmp_path / "one")[-1]["val_turns_mean"] == 1.0
    assert JobResult.read(tmp_path / "two").final["val_policy_acc"] == last["val_policy_acc"]


def preempt_and_resume(job_dir: Path, overrides: list[str]) -> subprocess.CompletedProcess:
    """Run train.py, SIGTERM it once its first checkpoint is written (a preemption), run it again."""
    cmd = [sys.executable, "train.py", *overrides, f"hydra.run.dir={job_dir}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 600
    while not (job_dir / "checkpoints" / "latest").exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 143 and JobResult.read(job_dir).status == "preempted"
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_solver_judge_default_learns_both_roles_reports_them_per_role_and_resumes_after_a_preemption(tmp_path):
    # The default with a 3x learning rate: 20 steps instead of the default's 30 (cost). Preempted
    # after its step-10 checkpoint and resumed from it: seeds are per step and the checkpoint holds
    # the optimizer state, so the resumed run is the uninterrupted one whose margins were measured.
    sj = tmp_path / "sj"
    short = ["trainer.lr=3e-3", "trainer.total_batches=20", "trainer.test_freq=10", "trainer.save_freq=10"]
    again = preempt_and_resume(sj, ["workflow=solver_judge", *short])
    assert again.returncode == 0 and "resuming from step_" in again.stdout, again.stdout[-3000:]
    result = JobResult.read(sj)
    assert result.status == "completed" and result.steps == 20 and result.restarts == 1
    train_metrics = [r for r in read_metrics(sj) if r["kind"] == "train"]
    assert [r["step"] for r in train_metrics] == list(range(1, 21))
    assert [v["step"] for v in result.validations] == [0, 10, 20] and "val_judge_acc" in result.final
    assert gain(sj, "val_solver_acc") >= 0.6, validations(sj)
    assert gain(sj, "val_judge_acc") >= 0.5, validations(sj)
    final = result.final
    for name in ("val_solver_acc", "val_judge_acc", "val_solver_reward_mean", "val_judge_reward_mean"):
        assert name in final
    assert final["val_turns_mean"] == 3.0  # 2 solvers + 1 judge
    assert {"train_solver_acc", "train_judge_acc", "train_tokens_mean"} <= set(train_metrics[-1])


def test_skyrl_gyms_gsm8k_environment_from_its_registry_runs_through_the_multi_turn_path(tmp_path):
    small = ["trainer.total_batches=2", "data.train_batch_size=4", "trainer.mini_batch_size=2", "rollout.n=2"]
    small += ["data.max_response_length=16", "data.val_batch_size=4", "trainer.save_freq=-1"]
    train(tmp_path / "gsm8k", "workflow=multi_turn", "task=gsm8k", "workflow.env=gsm8k", *small)
    vals = validations(tmp_path / "gsm8k")
    assert len(vals) == 2 and vals[-1]["val_num_samples"] == 4
    assert vals[-1]["val_turns_mean"] == 1.0  # skyrl-gym's gsm8k env is done after one reply
    assert vals[-1]["val_error_frac"] == 0.0
    steps = [r for r in read_metrics(tmp_path / "gsm8k") if r["kind"] == "train"]
    assert [r["step"] for r in steps] == [1, 2] and all(r["tokens_trained"] > 0 for r in steps)


def doc_blocks() -> list[str]:
    text = (REPO / "docs" / "WORKFLOWS.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_workflow_and_environment_written_as_the_docs_show_work(tmp_path, monkeypatch):
    workflow_code, env_code = doc_blocks()
    (tmp_path / "docs_example").mkdir()
    (tmp_path / "docs_example" / "__init__.py").write_text("")
    (tmp_path / "docs_example" / "flows.py").write_text(textwrap.dedent(workflow_code))
    (tmp_path / "docs_example" / "envs.py").write_text(textwrap.dedent(env_code))
    monkeypatch.syspath_prepend(str(tmp_path))  # the docs' package, for this test only
    from docs_example.envs import CountDown

    env = CountDown(extras={"reward_spec": {"ground_truth": "9"}, "max_turns": 5})
    outs = [env.step(a) for a in ("8", "7", "6")]
    assert [o["done"] for o in outs] == [False, False, True] and outs[-1]["reward"] == 1.0
    tiny = ["trainer.total_batches=1", "data.train_batch_size=4", "trainer.mini_batch_size=2", "rollout.n=2"]
    tiny += ["task.dataset.val_size=4", "trainer.save_freq=-1"]
    job = tmp_path / "job"
    train(job, "workflow.class=docs_example.flows:TwoDrafts", "+workflow.bonus=0.2", *tiny, pythonpath=str(tmp_path))
    final = JobResult.read(job).final
    assert {"val_drafter_acc", "val_reviser_acc"} <= set(final) and final["val_turns_mean"] == 2.0
