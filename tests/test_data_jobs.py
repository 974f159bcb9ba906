"""Datasets by path in real jobs: SkyRL's, rLLM's and verl's files train with skyrl-gym's rewards (real SkyRL,
JAX on CPU, the tiny model, which cannot solve GSM8K: the tests assert what ran, not that it learnt), a
multi-step environment through the multi-turn workflow, a sweep over generator.max_turns, bad input refused
before launch, and a preempted job that resumes with the batches of an uninterrupted run."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from data_files import (
    QUESTIONS,
    plain_rows,
    rllm_rows,
    rllm_verl_copy_rows,
    skyrl_rows,
    verl_rows,
    write_jsonl,
    write_parquet,
)
from test_workflow_learning import preempt_and_resume

from rllm_sweeps.records.metrics import read_metrics
from rllm_sweeps.records.result import JobResult

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
SHORT = ["data.train_batch_size=4", "data.val_batch_size=8", "rollout.n=2", "data.max_prompt_length=48"]
SHORT += ["data.max_response_length=8"]  # the toy length (a dataset by path gets SkyRL's 1024 otherwise)
SHORT += ["trainer.save_freq=-1", "trainer.test_freq=0", "trainer.val_before_train=false"]
LONG = (
    "Add these: " + " ".join(str(7 * i) for i in range(100)),
    "34650",
)  # longer than data.max_prompt_length=48 tokens


def train(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, str(REPO / "train.py"), *args]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def train_records(job_dir: Path) -> list[dict]:
    return [r for r in read_metrics(job_dir) if r["kind"] == "train"]


def test_skyrls_gsm8k_example_trains_on_skyrl_rllm_and_verl_files_with_the_environments_reward(tmp_path):
    # SkyRL's GSM8K example's data keys, on one file of each format (and rLLM's verl copy); the val rows name a
    # user's environment by import path whose reward (0.25 a reply) shows the reward is the environment's.
    files = [
        write_parquet(tmp_path / "skyrl.parquet", skyrl_rows([*QUESTIONS, LONG])),
        write_parquet(tmp_path / "rllm.parquet", rllm_rows()),
        write_parquet(tmp_path / "verl.parquet", verl_rows()),
        write_parquet(tmp_path / "rllm_verl.parquet", rllm_verl_copy_rows()),
    ]
    val = write_jsonl(tmp_path / "val.jsonl", skyrl_rows(env_class="tests.probes.data_env:ReplyEnv"))
    job = tmp_path / "job"
    proc = train(
        *SHORT,
        "trainer.total_batches=2",
        f"data.train_data=[{','.join(map(str, files))}]",
        f"data.val_data=[{val}]",
        "environment.env_class=gsm8k",
        "data.max_prompt_length=64",
        f"hydra.run.dir={job}",
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    for name, fmt in (("skyrl", "SkyRL's format"), ("rllm", "rLLM's format"), ("verl", "verl's format")):
        assert f"{tmp_path / name}.parquet: {fmt}" in out
    assert "rllm_verl.parquet: rLLM's verl copy (rows read from extra_info), 8 rows" in out
    assert "1 of 33 rows longer than data.max_prompt_length=64 tokens dropped (as SkyRL does)" in out
    assert out.count("data: data.train_files:") == 1  # the format is said once
    result = JobResult.read(job)
    assert result.status == "completed" and result.steps == 2
    assert [r["step"] for r in train_records(job)] == [1, 2]
    assert all(r["reward_mean"] in (0.0, 1.0) or 0 <= r["reward_mean"] <= 1 for r in train_records(job))
    assert result.final["val_reward_mean"] == 0.25 and result.final["val_turns_mean"] == 1.0


def test_bad_data_is_refused_before_launch_with_one_line_each(tmp_path):
    no_truth = write_parquet(tmp_path / "no_truth.parquet", [{"prompt": [{"role": "user", "content": "q"}]}])
    bad_env = skyrl_rows()
    bad_env[2]["env_class"] = "gsm9k"
    env_file = write_parquet(tmp_path / "env.parquet", bad_env)
    job = tmp_path / "job"
    proc = train(
        f"data.train_data=[{tmp_path / 'missing.parquet'},{no_truth}]",
        f"data.val_data=[{env_file}]",
        f"hydra.run.dir={job}",
        timeout=300,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line.strip() for line in proc.stderr.splitlines()]
    assert any(line.startswith(f"- data.train_files: {tmp_path / 'missing.parquet'}: no such file") for line in lines)
    assert any(line.startswith(f"- data.train_files: {no_truth}: missing column 'reward_spec'") for line in lines)
    assert any(line.startswith(f"- data.val_files: {env_file}: row 2, column env_class: unknown") for line in lines)
    assert not job.exists()  # nothing started, nothing written
    # Rows longer than data.max_prompt_length are dropped; when none remain, the job is refused.
    long = write_parquet(tmp_path / "long.parquet", plain_rows([LONG]))
    proc = train(f"data.train_files={long}", f"data.val_files={long}", "data.max_prompt_length=16", timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (
        f"data.train_files: every one of the 1 rows of {long} is longer than data.max_prompt_length=16 tokens: "
        "raise data.max_prompt_length" in proc.stderr
    )


def test_a_multi_step_environment_trains_through_the_multi_turn_workflow_and_resumes_with_the_same_batches(
    tmp_path,
):
    # skyrl-gym's gsm8k_multi_turn by environment.env_class on rows without their own: generator.max_turns=3
    # replies (the tiny model never answers right, so every episode takes all three). The same job preempted
    # after its step-3 checkpoint (stopped at the next step) and resumed sees the batches and losses of the
    # uninterrupted run, mid-epoch too (8 rows, 4 a step).
    train_file = write_parquet(tmp_path / "train.parquet", rllm_rows())
    val_file = write_parquet(tmp_path / "val.parquet", verl_rows()[:2])
    overrides = [
        *SHORT,
        "trainer.total_batches=6",  # 3 epochs of 2 steps: the resume at step 4 is mid-epoch
        "trainer.save_freq=3",
        f"data.train_files=[{train_file}]",
        f"data.val_files=[{val_file}]",
        "environment.env_class=gsm8k_multi_turn",
        "generator.max_turns=3",
        "data.max_prompt_length=512",  # the conversation's limit (SkyRL's max_input_length): room for 3 turns
    ]
    whole = train(*overrides, f"hydra.run.dir={tmp_path / 'whole'}")
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    resumed = preempt_and_resume(tmp_path / "resumed", overrides)
    assert resumed.returncode == 0 and "resuming from step_" in resumed.stdout, resumed.stdout[-3000:]
    a, b = train_records(tmp_path / "whole"), train_records(tmp_path / "resumed")
    assert [r["train_turns_mean"] for r in a] == [3.0] * 6
    keys = ("step", "reward_mean", "loss", "tokens_sampled", "tokens_trained")
    assert [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]
    assert JobResult.read(tmp_path / "resumed").restarts == 1


def test_a_sweep_over_generator_max_turns_checks_its_dataset_once_and_reports_the_turns(tmp_path):
    data = write_parquet(tmp_path / "d.parquet", skyrl_rows(env_class="tests.probes.data_env:ReplyEnv"))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        str(REPO / "train.py"),
        "-m",
        *SHORT,
        "trainer.total_batches=1",
        "data.max_prompt_length=256",
    ]
    cmd += [f"data.train_data=[{data}]", f"data.val_data=[{data}]", "generator.max_turns=1,2,3"]
    cmd += ["sweep.metric=val_turns_mean", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (proc.stdout + proc.stderr).count("data: data.train_files:") == 1  # one check for the three jobs
    rows = list(csv.DictReader((tmp_path / "sweep" / "report" / "jobs.csv").open()))
    turns = {json.dumps(r.get("generator.max_turns") or r.get("workflow.max_turns")): r for r in rows}
    assert len(rows) == 3, rows
    got = sorted(float(r["val_turns_mean_final"]) for r in rows)
    assert got == [1.0, 2.0, 3.0], turns
    results = [JobResult.read(p.parent) for p in sorted((tmp_path / "sweep").glob("jobs/*/result.json"))]
    assert sorted(r.final["val_reward_mean"] for r in results) == [0.25, 0.5, 0.75]  # 0.25 a reply


def test_dapo_filter_on_gsm8k_by_path_skips_steps_without_a_signal_and_resumes_with_the_same_batches(tmp_path):
    # The command (SkyRL's GSM8K parquet by path, DAPO's filter, 3 sample batches at most) on
    # the tiny model, which solves nothing: every batch keeps no prompt, which SkyRL 0.4.0's filter
    # cannot take ("indices must be non-empty"); each step samples its 3 batches and is skipped,
    # saying why. Preempted after its step-2 checkpoint (6 steps before its end) and resumed: the same batches (the data
    # position the extra sample batches moved is in the checkpoint), the same metrics.
    train_file = write_parquet(tmp_path / "train.parquet", skyrl_rows())
    val_file = write_parquet(tmp_path / "validation.parquet", skyrl_rows()[:2])
    overrides = [
        *SHORT,
        "trainer.total_batches=8",
        "trainer.save_freq=2",
        f"data.train_data=['{train_file}']",
        f"data.val_data=['{val_file}']",
        "environment.env_class=gsm8k",
        "data.max_prompt_length=512",
        "skyrl.train.trainer.algorithm.dynamic_sampling.type=filter",
        "skyrl.train.trainer.algorithm.dynamic_sampling.max_sample_batches=3",
    ]
    whole = train(*overrides, f"hydra.run.dir={tmp_path / 'whole'}")
    assert whole.returncode == 0, whole.stdout[-3000:] + whole.stderr[-3000:]
    assert JobResult.read(tmp_path / "whole").status == "completed"
    assert "skipped: no prompt with a reward signal" in whole.stdout  # the console's step line says why
    resumed = preempt_and_resume(tmp_path / "resumed", overrides)
    assert resumed.returncode == 0 and "resuming from step_" in resumed.stdout, resumed.stdout[-3000:]
    a, b = train_records(tmp_path / "whole"), train_records(tmp_path / "resumed")
    assert [(r["dynamic_sampling_batches"], r["dynamic_sampling_kept_groups"]) for r in a] == [(3, 0)] * 8
    assert all(r["skipped"].startswith("no prompt with a reward signal") for r in a)
    keys = ("step", "epoch", "dynamic_sampling_batches", "dynamic_sampling_dropped_groups", "tokens_sampled", "skipped")
    assert [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]
