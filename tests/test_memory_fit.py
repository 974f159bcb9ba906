"""A GPU job's sizes fitted to its share (training/memory_fit.py), out-of-memory retried at half size
(training/memory_retry.py): the sizing rule against the estimate and the retry policy (pure), and on
SkyRL's real JAX engine (CPU, tiny model) the same update at any micro batch, after a retry too."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from rllm_sweeps.config.memory_need import model_shape
from rllm_sweeps.records.memory import GIB, MemoryFit, MemoryRetry
from rllm_sweeps.training.gpu_memory import ACTIVATION_FACTOR, RunShape, memory_need
from rllm_sweeps.training.memory_fit import (
    call_halving,
    choose_sizes,
    factor_seen,
    fit_micro_batch,
    fit_sample_sequences,
    fit_size,
    fits_at_all,
    learned_factor,
)
from rllm_sweeps.training.memory_retry import MemoryExhausted, memory_retrying

QWEN = model_shape("builtin:qwen3-0.5b-random")
H100_SHARE = int(0.75 * 79.6 * GIB)  # JAX's default 0.75 of an 80 GB H100 (NVML: 81,559 MiB)
H200_SHARE = int(0.75 * 140.4 * GIB)
LR = 1e-3
OOM = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 21474836480 bytes."


def bench_need(micro_batch: int = 64, sample: int = 256):
    """bench/gpu_placement.py's job (issue 48's "Why"): 32 prompts x 8 samples, 64 + 128 tokens, LoRA r32."""
    need = memory_need(QWEN, RunShape(micro_batch, 192, sample, 192, lora_rank=32, lora_adapters=4))
    return replace(need, auto_micro_batch=True, auto_sample_sequences=True)


def test_auto_is_the_largest_power_of_two_the_estimate_fits_into_the_share_with_a_margin():
    need = bench_need()
    assert need.total_gib(64, 256) == pytest.approx(78.5, abs=0.3)  # the default: out of memory on an H100
    assert fit_micro_batch(need, H100_SHARE) == 32  # what completed both jobs there
    assert fit_micro_batch(need, H200_SHARE) == 64  # a whole H200 fits the default itself
    assert fit_micro_batch(need, int(0.45 * 140.4 * GIB)) == 32  # two sharing an H200 (16 ran; 64 did not)
    assert fit_size(48, lambda s: s, 48) == 48  # the largest itself where it fits
    assert fit_size(48, lambda s: s, 40) == 32  # else a power of two below it
    assert fit_size(4, lambda s: 10, 5) is None


def test_a_job_too_large_at_one_sequence_fits_at_no_size():
    need = bench_need()
    tiny_share = int(0.5 * GIB)
    assert not fits_at_all(need, tiny_share)
    assert fit_micro_batch(need, tiny_share) is None and fit_sample_sequences(need, tiny_share) is None


def test_the_samplers_batch_is_fitted_on_its_own():
    need = bench_need()
    room_for_100 = int((need.fixed + need.sampling_bytes(100)) / 0.9)  # 100 sampled sequences, with the margin
    assert fit_sample_sequences(need, room_for_100) == 64  # the largest power of two under 100
    assert fit_sample_sequences(need, H100_SHARE) == 256  # the whole rollout at once
    assert fit_micro_batch(need, room_for_100) is not None and fit_micro_batch(need, room_for_100) < 64


def test_a_number_set_is_kept_and_warned_about_where_it_does_not_fit():
    need = bench_need()
    choice = choose_sizes(need, 64, None, H100_SHARE)
    assert (choice.micro_batch, choice.train_chosen, choice.sample_chosen) == (64, "set", "auto")
    warning = [line for line in choice.lines if line.startswith("warning: skyrl.jax.train_micro_batch_size=64")]
    assert len(warning) == 1 and "auto would be 32" in warning[0]
    auto = choose_sizes(need, None, None, H100_SHARE)
    assert auto.micro_batch == 32 and not any(line.startswith("warning") for line in auto.lines)
    assert "skyrl.jax.train_micro_batch_size=32 (auto)" in auto.lines[0]


def test_without_a_gpu_share_auto_leaves_the_cpu_defaults():
    choice = choose_sizes(bench_need(), None, None, None)
    assert (choice.micro_batch, choice.sample_sequences, choice.lines) == (None, None, ())


def xla_out_of_memory() -> Exception:
    import jax

    return jax.errors.JaxRuntimeError(OOM)


def test_an_out_of_memory_at_the_first_call_only_is_retried_once_at_half_size():
    """The pure policy, with an engine stub that raises XLA's RESOURCE_EXHAUSTED at its first call."""
    sizes, resized = [64], []

    def call() -> str:
        if len(resized) == 0:
            raise xla_out_of_memory()
        return f"ran at {sizes[-1]}"

    def resize(smaller: int) -> None:
        resized.append(smaller)
        sizes.append(smaller)

    from rllm_sweeps.training.memory_fit import is_out_of_device_memory

    assert call_halving(call, 64, resize, is_out_of_device_memory) == "ran at 32"
    assert resized == [32]


def test_out_of_memory_at_every_size_is_raised_after_size_one_and_other_errors_are_not_retried():
    from rllm_sweeps.training.memory_fit import is_out_of_device_memory

    resized: list[int] = []

    def always():
        raise xla_out_of_memory()

    with pytest.raises(Exception, match="RESOURCE_EXHAUSTED"):
        call_halving(always, 8, resized.append, is_out_of_device_memory)
    assert resized == [4, 2, 1]

    def broken():
        raise ValueError("a config error")

    with pytest.raises(ValueError):
        call_halving(broken, 8, resized.append, is_out_of_device_memory)
    assert resized == [4, 2, 1]


class StubEngine:
    """An engine that runs out of memory at its first forward_backward only (the pure policy test)."""

    def __init__(self, fail_always: bool = False) -> None:
        self.config = SimpleNamespace(train_micro_batch_size=64, sample_max_num_sequences=256, max_lora_adapters=4)
        self.calls: list[int] = []
        self.fail_always = fail_always

    def forward_backward(self, prepared_batch):
        self.calls.append(self.config.train_micro_batch_size)
        if len(self.calls) == 1 or self.fail_always:
            raise xla_out_of_memory()
        return "gradients"


def test_the_engines_retry_is_recorded_and_teaches_the_estimate_its_factor(tmp_path):
    engine = memory_retrying(StubEngine)()
    engine._reset_accumulated_gradients = lambda: None  # a stub holds no gradients
    engine.memory_fit = MemoryFit(64, 256, "set", "auto")
    engine.memory_need, engine.memory_share, engine.memory_cache = bench_need(), H100_SHARE, tmp_path
    assert engine.forward_backward(None) == "gradients"
    assert engine.calls == [64, 32] and engine.config.train_micro_batch_size == 32
    assert engine.memory_fit.retries == [MemoryRetry("train_micro_batch_size", 64, 32)]
    assert engine.memory_fit.train_micro_batch_size == 32
    # 64 ran out of an H100's 0.75 (its estimate said so already: the factor stays, nothing is learned)
    assert engine.memory_fit.activation_factor == ACTIVATION_FACTOR and learned_factor(tmp_path) is None


def test_a_size_that_failed_under_the_estimate_raises_the_factor_for_the_next_job(tmp_path):
    need, share = bench_need(), H200_SHARE  # 64 fits a whole H200 by the estimate
    factor = factor_seen(need, 64, share)
    assert factor > ACTIVATION_FACTOR
    assert need.fixed + replace(need, activation_factor=factor).training_bytes(64) == pytest.approx(share, rel=1e-6)
    engine = memory_retrying(StubEngine)()
    engine._reset_accumulated_gradients = lambda: None
    engine.memory_fit = MemoryFit(64, 256, "auto", "auto")
    engine.memory_need, engine.memory_share, engine.memory_cache = need, share, tmp_path
    engine.forward_backward(None)
    assert learned_factor(tmp_path) == pytest.approx(factor, abs=1e-3)
    assert fit_micro_batch(replace(need, activation_factor=learned_factor(tmp_path)), share) == 32


def test_out_of_memory_at_micro_batch_one_is_the_jobs_failure_with_its_record():
    engine = memory_retrying(StubEngine)(fail_always=True)
    engine._reset_accumulated_gradients = lambda: None
    engine.memory_fit = MemoryFit(64, 256, "auto", "auto")
    with pytest.raises(MemoryExhausted) as raised:
        engine.forward_backward(None)
    assert engine.calls == [64, 32, 16, 8, 4, 2, 1]
    assert [r.retried_at for r in raised.value.fit.retries] == [32, 16, 8, 4, 2, 1]
    from rllm_sweeps.failures import failure_kind, out_of_memory_fix
    from rllm_sweeps.records.status import FailureKind

    assert failure_kind(raised.value) is FailureKind.OUT_OF_MEMORY
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.job import JobConfig

    overrides = ["skyrl.jax.gradient_checkpointing=false", "resources.jobs_per_gpu=1", "model.lora.rank=32"]
    job = JobConfig.of(load_config([*overrides, "resources.gpus_per_node=1"], notify=lambda _: None))
    fix = out_of_memory_fix(job.engine_settings, raised.value.fit)
    assert "train_micro_batch_size" not in fix and "jobs_per_gpu" not in fix  # both already in effect
    assert "gradient_checkpointing=true" in fix and "model.lora.rank=16" in fix


# ---- SkyRL's real JAX engine (CPU, the built-in tiny model) ---------------------------------------


def real_engine(micro_batch: int):
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.config.load import load_config
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.training.jax_backend import make_jax_backend
    from rllm_sweeps.training.settings import LoopSettings

    cfg = load_config(["model.lora.rank=4", "model.lora.alpha=8"])
    settings = LoopSettings.from_config(cfg)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    backend = make_jax_backend(model_dir, settings, train_micro_batch_size=micro_batch, sample_max_num_sequences=4)
    backend.memory_fit = MemoryFit(micro_batch, 4, "set", "set")
    return backend, settings


def one_update(backend, settings, tmp_path) -> tuple[np.ndarray, np.ndarray]:
    """(the mean gradient, the LoRA weights after one optimizer step) of one mini batch of 8 sequences."""
    import jax

    from rllm_sweeps.training.datums import Datum
    from rllm_sweeps.training.policy import Policy

    policy = Policy(backend, "policy", tmp_path)
    policy.create(settings)
    rng = np.random.default_rng(0)
    datums = []
    for i in range(8):
        n = 6 + i % 3  # unequal lengths: padding differs by micro batch
        tokens = rng.integers(3, 200, n + 1).tolist()
        adv = [float(rng.normal())] * n
        datums.append(Datum(tokens[:-1], tokens[1:], [1.0] * n, [-1.0] * n, adv, n, i // 2))
    policy.forward_backward(datums, "importance_sampling", None)
    index = backend.models["policy"].adapter_index
    grads = backend.accumulated_grads.get_mean(index)
    flat_grads = np.concatenate([np.ravel(x) for x in jax.tree.leaves(grads)])
    policy.optim_step(LR, settings)
    flat_weights = np.concatenate([np.ravel(x) for x in jax.tree.leaves(backend.lora_params)])
    return flat_grads, flat_weights


@pytest.fixture(scope="module")
def whole_batch_update(tmp_path_factory) -> tuple[np.ndarray, np.ndarray]:
    """The update at micro batch 8 (the whole mini batch in one call), that both tests compare with."""
    return one_update(*real_engine(8), tmp_path_factory.mktemp("whole"))


@pytest.mark.slow
def test_the_same_parameter_update_at_two_micro_batches(tmp_path, whole_batch_update):
    """SkyRL accumulates each micro batch's gradients and steps once: micro batch 8 (the whole mini
    batch) and 2 (four calls) give the same gradient and the same weights after the step."""
    whole = whole_batch_update
    quarters = one_update(*real_engine(2), tmp_path / "b")
    assert np.abs(whole[0]).max() > 0
    np.testing.assert_allclose(quarters[0], whole[0], rtol=1e-4, atol=1e-7)
    # Adam's step is lr x m / (sqrt(v) + eps): where a gradient is near 0 float32's summation order shows
    np.testing.assert_allclose(quarters[1], whole[1], rtol=1e-5, atol=LR / 100)


@pytest.mark.slow
def test_an_out_of_memory_in_the_real_engine_is_retried_at_half_in_the_same_attempt(tmp_path, whole_batch_update):
    """XLA's RESOURCE_EXHAUSTED injected after the engine's first micro batch has already added its
    gradients: the retry at half size rebuilds them, so the update is the one of an unfailed run (the
    same at every micro batch: the test above)."""
    clean = whole_batch_update
    backend, settings = real_engine(4)
    real = backend._forward_backward_and_accumulate
    calls = []

    def first_fails(*args):
        calls.append(args[3].shape[0])  # input_ids: this micro batch's sequences
        out = real(*args)
        if len(calls) == 1:
            backend.accumulated_grads = out[0]  # what a partial pass leaves behind
            raise xla_out_of_memory()
        return out

    backend._forward_backward_and_accumulate = first_fails
    retried = one_update(backend, settings, tmp_path / "b")
    assert calls[:2] == [4, 2] and backend.config.train_micro_batch_size == 2
    assert backend.memory_fit.retries == [MemoryRetry("train_micro_batch_size", 4, 2)]
    np.testing.assert_allclose(retried[0], clean[0], rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(retried[1], clean[1], rtol=1e-5, atol=LR / 100)
