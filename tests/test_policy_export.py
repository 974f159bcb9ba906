"""A job's trained policy is usable outside the project (issue 55): every job exports its final and best
policy as a PEFT LoRA adapter through SkyRL's own writer, and what transformers + PEFT compute with it is
what the engine computed in training. One tiny default job (2 steps) serves every check here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from policy_logprobs import ATOL, adapter_logprobs, engine_logprobs, fixed_tokens, merged_logprobs

from rllm_sweeps.cli import main
from rllm_sweeps.records.layout import JobPaths
from rllm_sweeps.records.result import JobResult

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
# The default job with the fewest, smallest steps: 2 steps of 4 prompts x 4 samples, validated after each.
JOB = ["trainer.total_batches=2", "data.train_batch_size=4", "rollout.n=4", "task.dataset.val_size=4"]
JOB += ["trainer.test_freq=1"]
ADAPTED = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}  # SkyRL's LoRA targets


@pytest.fixture(scope="module")
def default_job(tmp_path_factory) -> Path:
    job_dir = tmp_path_factory.mktemp("export") / "job"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, str(REPO / "train.py"), *JOB, f"hydra.run.dir={job_dir}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return job_dir


@pytest.fixture(scope="module")
def logprobs(default_job) -> dict[str, np.ndarray]:
    """The fixed response's log-probs: the engine's before and after training, and the exported adapter's."""
    result = JobResult.read(default_job)
    adapter = default_job / result.exports.final.path
    base = json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]
    tokens, n_prompt = fixed_tokens(base)
    checkpoint = JobPaths(default_job).checkpoints / f"step_{result.steps}" / "policy.ckpt"
    untrained, trained = engine_logprobs(default_job, checkpoint, tokens, n_prompt)
    return {
        "untrained": untrained,
        "engine": trained,
        "adapter": adapter_logprobs(adapter, base, tokens, n_prompt),
        "tokens": np.asarray(tokens),
        "n_prompt": np.asarray(n_prompt),
    }


def test_the_default_job_exports_its_final_policy_as_a_peft_adapter_named_in_result_json(default_job):
    result = JobResult.read(default_job)
    final = result.exports.final
    assert result.status == "completed" and final is not None and final.step == result.steps == 2
    adapter = default_job / final.path
    assert adapter == JobPaths(default_job).exported("final")
    assert sorted(p.name for p in adapter.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    config = json.loads((adapter / "adapter_config.json").read_text())
    assert Path(config["base_model_name_or_path"]).is_dir()  # the model the job trained on
    cfg = (default_job / "config.yaml").read_text()
    assert f"rank: {config['r']}" in cfg and config["lora_alpha"] > 0
    assert set(config["target_modules"]) == ADAPTED  # SkyRL leaves it null: PEFT would load q_proj, v_proj only
    assert not list(JobPaths(default_job).export.glob("*.tmp")) and not list(JobPaths(default_job).export.glob("*.gz"))


def test_the_exported_adapter_loaded_with_transformers_and_peft_gives_the_engines_logprobs(logprobs):
    assert np.allclose(logprobs["adapter"], logprobs["engine"], atol=ATOL), np.abs(
        logprobs["adapter"] - logprobs["engine"]
    ).max()


def test_the_exported_adapter_is_the_trained_policy_not_the_untrained_one(logprobs):
    # The step-0 adapter (LoRA B = 0) computes the base model: this fails if the export were it.
    assert np.abs(logprobs["engine"] - logprobs["untrained"]).max() > 100 * ATOL
    assert np.abs(logprobs["adapter"] - logprobs["untrained"]).max() > 100 * ATOL


def test_the_job_exports_its_best_validated_policy_after_a_training_step(default_job):
    result = JobResult.read(default_job)
    best = result.exports.best
    assert best is not None and best.metric == "val_reward_mean" and best.step >= 1
    trained = [v for v in result.validations if v["step"] >= 1]
    assert best.value == max(v["val_reward_mean"] for v in trained)
    assert best.step == next(v["step"] for v in trained if v["val_reward_mean"] == best.value)  # the first such
    assert (default_job / best.path / "adapter_model.safetensors").is_file()


def test_export_merge_writes_a_checkpoint_transformers_loads_with_the_adapters_logprobs_and_tokenizer(
    default_job, logprobs, tmp_path, capsys
):
    out = tmp_path / "merged"
    assert main(["export", str(default_job), "--merge", "--out", str(out)]) == 0
    assert f"job {default_job.name}: its final policy merged into" in capsys.readouterr().out
    tokens, n_prompt = logprobs["tokens"].tolist(), int(logprobs["n_prompt"])
    assert np.allclose(merged_logprobs(out, tokens, n_prompt), logprobs["adapter"], atol=ATOL)
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(out)).chat_template  # the base model's chat template came along
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--best"], "is not a sweep directory: --best and --job choose among a sweep's jobs"),
        (["--policy", "best", "--out", "{job}/x"], None),  # fine: a job by hand is no sweep
    ],
)
def test_export_of_a_job_refuses_a_sweep_choice_rc2_with_one_line(default_job, tmp_path, capsys, args, says):
    args = [a.replace("{job}", str(tmp_path)) for a in args]
    out = [] if "--out" in args else ["--out", str(tmp_path / "out")]
    rc = main(["export", str(default_job), *args, *out])
    err = capsys.readouterr().err
    if says is None:
        assert rc == 0 and (tmp_path / "x" / "adapter_config.json").is_file()
    else:
        assert rc == 2 and len(err.strip().splitlines()) == 1 and says in err and not (tmp_path / "out").exists()


def test_export_refuses_an_output_that_holds_files_rc2(default_job, tmp_path, capsys):
    (tmp_path / "kept.txt").write_text("mine")
    assert main(["export", str(default_job), "--out", str(tmp_path)]) == 2
    assert "exists and is not an empty directory: give a new --out" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]
