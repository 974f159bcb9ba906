"""A job's trained policy is usable outside the project (issue 55): every job exports its final and best
policy as a PEFT LoRA adapter through SkyRL's own writer, what transformers + PEFT compute with it is
what the engine computed in training, and `rllm-sweeps export` hands a sweep's winner over, merged if
asked. Every check reads the one finished two-job sweep of the session (finished_sweeps.py): its job 0
is the default job (lr 1e-3) with 2 quick steps."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from policy_logprobs import ATOL, adapter_logprobs, engine_logprobs, fixed_tokens, merged_logprobs

from rllm_sweeps.cli import main
from rllm_sweeps.models.merge import adapter_base_model
from rllm_sweeps.records.layout import JobPaths, SweepPaths
from rllm_sweeps.records.result import JobResult, PolicyExports
from rllm_sweeps.report.model import build_report

pytestmark = pytest.mark.slow
ADAPTED = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}  # SkyRL's LoRA targets


@pytest.fixture(scope="module")
def default_job(finished_sweep) -> Path:
    job = SweepPaths(finished_sweep).job_dirs()[0]
    assert "trainer.lr=0.001" in JobResult.read(job).overrides  # the default lr
    return job


@pytest.fixture(scope="module")
def logprobs(default_job) -> dict[str, np.ndarray]:
    """The fixed response's log-probs: the engine's before and after training, and the exported adapter's."""
    result = JobResult.read(default_job)
    adapter = default_job / result.exports.final.path
    base = adapter_base_model(adapter)
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
    assert f"rank: {config['r']}" in (default_job / "config.yaml").read_text() and config["lora_alpha"] > 0
    assert set(config["target_modules"]) == ADAPTED  # SkyRL leaves it null: PEFT would load q_proj, v_proj only
    assert sorted(p.name for p in JobPaths(default_job).export.iterdir()) == ["best", "final"]  # no leftovers


def test_the_exported_adapter_loaded_with_transformers_and_peft_gives_the_engines_logprobs(logprobs):
    gap = np.abs(logprobs["adapter"] - logprobs["engine"]).max()
    assert gap <= ATOL, gap


def test_the_exported_adapter_is_the_trained_policy_not_the_untrained_one(logprobs):
    # The step-0 adapter (LoRA B = 0) computes the base model: this fails if the export were it.
    assert np.abs(logprobs["engine"] - logprobs["untrained"]).max() > 100 * ATOL
    assert np.abs(logprobs["adapter"] - logprobs["untrained"]).max() > 100 * ATOL


def test_the_job_exports_its_best_validated_policy(default_job):
    result = JobResult.read(default_job)
    best = result.exports.best
    assert best is not None and best.metric == "val_reward_mean" and best.step == 2  # its one validation
    assert best.value == result.final["val_reward_mean"]
    assert (default_job / best.path / "adapter_model.safetensors").is_file()


def test_export_merge_of_a_job_writes_a_checkpoint_with_the_adapters_logprobs_and_its_tokenizer(
    default_job, logprobs, tmp_path, capsys
):
    out = tmp_path / "merged"
    assert main(["export", str(default_job), "--merge", "--out", str(out)]) == 0
    assert f"job {default_job.name}: its final policy merged into" in capsys.readouterr().out
    tokens, n_prompt = logprobs["tokens"].tolist(), int(logprobs["n_prompt"])
    assert np.abs(merged_logprobs(out, tokens, n_prompt) - logprobs["adapter"]).max() <= ATOL
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(out)).chat_template  # the base model's chat template came along
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()


def test_export_best_merge_of_a_finished_sweep_writes_a_checkpoint_with_its_winners_adapter_logprobs(
    finished_sweep, tmp_path, capsys
):
    jobs = SweepPaths(finished_sweep).jobs
    before = {p: p.stat().st_mtime_ns for p in jobs.rglob("*")}
    out = tmp_path / "model"
    assert main(["export", str(finished_sweep), "--best", "--merge", "--out", str(out)]) == 0
    best = build_report(finished_sweep).best_model
    assert best is not None and best.adapter is not None
    assert f"the sweep's best point by val_reward_mean: job {best.job_dir.name}" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in jobs.rglob("*")} == before  # nothing written into the sweep
    tokens, n_prompt = fixed_tokens(out)  # the merged checkpoint's own tokenizer and chat template
    merged = merged_logprobs(out, tokens, n_prompt)
    adapter = adapter_logprobs(best.adapter, adapter_base_model(best.adapter), tokens, n_prompt)
    assert np.abs(merged - adapter).max() <= ATOL


def test_the_report_and_status_say_where_the_best_model_is(finished_sweep, capsys):
    best = build_report(finished_sweep).best_model
    assert main(["status", str(finished_sweep)]) == 0
    status = capsys.readouterr().out
    assert f"best model: {best.adapter} (job {best.job_dir.name}" in status and "final+best" in status
    assert main(["report", str(finished_sweep), "--no-plots"]) == 0
    assert f"best model: {best.adapter}" in capsys.readouterr().out
    markdown = (finished_sweep / "report" / "report.md").read_text()
    assert f"rllm-sweeps export {finished_sweep} --best --merge" in markdown


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--best"], "is not a sweep directory: --best and --job choose among a sweep's jobs"),
        (["--job", "0"], "is not a sweep directory: --best and --job choose among a sweep's jobs"),
    ],
)
def test_export_of_a_job_refuses_a_sweep_choice_rc2_with_one_line(default_job, tmp_path, capsys, args, says):
    assert main(["export", str(default_job), *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and not (tmp_path / "out").exists()


def test_export_of_a_sweep_without_a_choice_or_with_an_unknown_job_is_refused_rc2(finished_sweep, tmp_path, capsys):
    assert main(["export", str(finished_sweep), "--out", str(tmp_path / "a")]) == 2
    assert "is a sweep: add --best (its winner) or --job ID" in capsys.readouterr().err
    assert main(["export", str(finished_sweep), "--job", "7", "--out", str(tmp_path / "b")]) == 2
    assert "no single job '7'" in capsys.readouterr().err
    assert main(["export", str(finished_sweep), "--job", "1", "--policy", "best", "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c" / "adapter_config.json").is_file()


def test_export_refuses_an_output_that_holds_files_rc2(default_job, tmp_path, capsys):
    (tmp_path / "kept.txt").write_text("mine")
    assert main(["export", str(default_job), "--out", str(tmp_path)]) == 2
    assert "exists and is not an empty directory: give a new --out" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]


@pytest.mark.parametrize(
    ("exports", "says"),
    [
        (PolicyExports(), "has no final policy: it exported none (still running, or run before"),
        (PolicyExports(not_exported="nothing exported: training diverged at step 1"), "training diverged at step 1"),
    ],
)
def test_export_of_a_job_that_exported_nothing_is_refused_rc2_saying_why(tmp_path, capsys, exports, says):
    job = tmp_path / "job"
    JobResult(status="failed", config_hash="abc", steps=1, exports=exports).write(job)
    assert main(["export", str(job), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err and not (tmp_path / "out").exists()


def _vllm_prompt_logprobs(llm, tokens: list[int], n_prompt: int, lora=None) -> np.ndarray:
    """vLLM's log-prob of each response token, read from its prompt log-probs of the whole sequence."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(max_tokens=1, prompt_logprobs=0)
    out = llm.generate(TokensPrompt(prompt_token_ids=tokens), params, lora_request=lora)
    rows = out[0].prompt_logprobs  # one per prompt token, None for the first
    return np.array([rows[i][tokens[i]].logprob for i in range(n_prompt, len(tokens))])


@pytest.mark.gpu
@pytest.mark.skipif(find_spec("vllm") is None, reason="vLLM is not installed here (a CUDA machine with it)")
def test_vllm_serves_the_merged_checkpoint_and_the_adapter_with_the_adapters_logprobs(default_job, logprobs, tmp_path):
    """Where vLLM runs (not on this project's CPU or GPU machines: docs/REPORTS.md says so): the merged
    export and the adapter through vLLM's LoRA support give the log-probs transformers + PEFT give."""
    from vllm import LLM
    from vllm.lora.request import LoRARequest

    out = tmp_path / "merged"
    assert main(["export", str(default_job), "--merge", "--out", str(out)]) == 0
    tokens, n_prompt = logprobs["tokens"].tolist(), int(logprobs["n_prompt"])
    merged = LLM(model=str(out), dtype="float32", enforce_eager=True, gpu_memory_utilization=0.3)
    assert np.abs(_vllm_prompt_logprobs(merged, tokens, n_prompt) - logprobs["adapter"]).max() <= 10 * ATOL
    del merged
    adapter = default_job / JobResult.read(default_job).exports.final.path
    base = LLM(
        model=str(adapter_base_model(adapter)), dtype="float32", enforce_eager=True, enable_lora=True,
        max_lora_rank=64, gpu_memory_utilization=0.3,
    )  # fmt: skip
    served = _vllm_prompt_logprobs(base, tokens, n_prompt, LoRARequest("policy", 1, str(adapter)))
    assert np.abs(served - logprobs["adapter"]).max() <= 10 * ATOL
