"""Single-turn RL loop against SkyRL's ``AbstractBackend`` (JAX on CPU, one GPU, Ray; FSDP/Megatron).

One training step, top to bottom (:meth:`RLTrainer.train_step`):

1. take ``data.train_batch_size`` prompts (a fixed shuffle per epoch, a pure
   function of ``trainer.seed`` and the step: no hidden RNG state);
2. ``backend.sample``: ``rollout.n`` responses per prompt, at most
   ``data.max_response_length`` tokens, ``rollout.train.{temperature,top_p}``
   and SkyRL's ``generator.sampling_params.top_k``, stopping at the tokenizer's
   end-of-turn token; the sampler returns the sampled tokens' logprobs;
3. the task's reward function scores each response;
4. one advantage per response from its group of ``rollout.n``
   (``algorithm.adv_estimator``), broadcast over the response tokens; with
   ``algorithm.use_kl_loss`` and ``kl_beta > 0``, minus ``kl_beta`` x the
   per-token log-ratio of the sampling policy to the base model (a KL penalty
   folded into the advantage, as Tinker does; the base model is an untrained
   second LoRA adapter, one extra ``backend.forward`` per mini batch);
5. per optimizer mini batch (``trainer.mini_batch_size`` prompts):
   ``backend.forward_backward`` with loss ``algorithm.loss_fn`` (``ppo``: clip
   ``1 - eps_clip`` .. ``1 + eps_clip_high``; ``cispo``: SkyRL's CISPO clip range;
   ``importance_sampling``; on SkyRL's GPU trainer any SkyRL policy loss, with
   its parameters from ``skyrl.train``), then ``backend.optim_step`` (Adam with
   ``trainer.lr`` at this step's schedule, betas, weight decay);
6. ``backend.save_sampler_checkpoint``: the sampler uses the new weights next (only where the
   weights move: SkyRL's JAX backends sample from the adapter they train, published once).

Validation (:meth:`RLTrainer.validate`) samples ``rollout.n_val`` responses per
val prompt at ``rollout.val.temperature`` (0 = greedy) and reports the mean
reward; it runs before training (``trainer.val_before_train``), every
``trainer.test_freq`` steps and after the last step.

Loss aggregation. The backends reduce per-token losses their own way: SkyRL's JAX
backend averages each sequence over its tokens, then the sequences
(``seq-mean-token-mean``); SkyRL's GPU trainer in Tinker mode sums the tokens (its own
``loss_reduction`` lives in its PPO loop, which this loop replaces). ``algorithm.loss_agg_mode``
is obtained by scaling each response's per-token advantages by a positive factor
(:func:`loss_agg_scales`), exact because the losses are linear in the advantage up to a
positive factor.

Checkpoints (:meth:`RLTrainer.save_checkpoint`): a directory holding the
backend's training checkpoint of the policy (LoRA weights + optimizer state) as
``<model_id>.ckpt`` and ``trainer_state.json`` (the step; everything else is a
function of it). Resume = :meth:`RLTrainer.load_checkpoint` before :meth:`fit`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rllm_sweeps.engines import EngineTraits, traits
from rllm_sweeps.tasks.base import Task
from rllm_sweeps.training.advantages import compute_advantages
from rllm_sweeps.training.settings import LoopSettings

log = logging.getLogger(__name__)

TRAINER_STATE_FILE = "trainer_state.json"
# Streams of randomness, each derived from (trainer.seed, stream, step).
_SEED_TRAIN_SAMPLING, _SEED_VAL_SAMPLING, _SEED_DATA_ORDER = 1, 2, 3


@dataclass
class TrainerState:
    """Everything the loop needs to resume besides the backend's checkpoint."""

    step: int = 0  # training steps completed
    val_history: list[dict] = field(default_factory=list)  # (step, val_reward_mean) of each validation

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> TrainerState:
        return cls(step=int(d["step"]), val_history=list(d.get("val_history", [])))


@dataclass
class LoopHooks:
    """Callbacks (all optional). Metrics are flat dicts of numbers; see RLTrainer."""

    on_step_end: Callable[[dict], None] | None = None
    on_validation_end: Callable[[dict], None] | None = None
    on_checkpoint: Callable[[Path, TrainerState], None] | None = None
    should_stop: Callable[[], bool] | None = None  # polled before each step


@dataclass
class Rollout:
    """One sampled response and what the loop derives from it."""

    prompt_index: int  # index into the batch's prompts
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]  # sampler's logprob of each response token
    stop_reason: str
    response_text: str = ""
    reward: float = 0.0
    advantage: float = 0.0


class RLTrainer:
    """The RL loop. ``fit()`` runs it; ``train_step()`` / ``validate()`` are its parts.

    Args:
        settings: the loop's typed settings (``LoopSettings.from_config(cfg)``).
        backend: any ``skyrl.backends.backend.AbstractBackend``, built on the model.
        task: dataset + reward (``rllm_sweeps.tasks.load_task``).
        tokenizer: the model's Hugging Face tokenizer.
        work_dir: scratch space of this run (sampler weight files).
        model_id: the policy's id in the backend.
        hooks: per-step / validation / checkpoint callbacks.
        checkpoint_dir: if set, checkpoints go to ``checkpoint_dir/step_<k>`` every
            ``trainer.save_freq`` steps and after the last step; ``latest`` names
            the newest complete one.
        engine: what the backend's engine does itself (``rllm_sweeps.engines.traits``;
            default: SkyRL's JAX backend).
    """

    def __init__(
        self,
        settings: LoopSettings,
        backend: Any,
        task: Task,
        tokenizer: Any,
        work_dir: str | os.PathLike,
        *,
        model_id: str = "policy",
        hooks: LoopHooks | None = None,
        checkpoint_dir: str | os.PathLike | None = None,
        engine: EngineTraits | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine or traits("jax")
        self.backend = backend
        self.task = task
        self.tokenizer = tokenizer
        self.work_dir = Path(work_dir)
        self.model_id = model_id
        self.ref_model_id = f"{model_id}-ref"
        self.hooks = hooks or LoopHooks()
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.state = TrainerState()
        self.total_steps = settings.total_steps(len(task.train))
        self.stop_token_ids = _stop_token_ids(tokenizer)
        self._prompt_cache: dict[tuple[str, int], tuple[list[int], bool]] = {}
        self._sampler_ckpt: tuple[str, Path] | None = None
        self._sync_count = 0
        self._is_setup = False
        if self.total_steps > 0 and len(task.train) < settings.train_batch_size:
            raise ValueError(
                f"task {task.name!r} has {len(task.train)} train examples < data.train_batch_size="
                f"{settings.train_batch_size}"
            )

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        """Create the policy (LoRA + optimizer) in the backend and publish it to the sampler."""
        if self._is_setup:
            return
        from skyrl.tinker import types

        s = self.settings
        lora = types.LoraConfig(rank=s.lora_rank, alpha=s.lora_alpha, seed=s.seed)
        if not self.backend.has_model(self.model_id):
            self.backend.create_model(self.model_id, lora)
        if s.kl_active and not self.backend.has_model(self.ref_model_id):
            # Never trained: its LoRA B is zero, so it computes the base model.
            self.backend.create_model(self.ref_model_id, lora)
        self._is_setup = True
        self._sync_sampler()

    # ------------------------------------------------------------------ main loop
    def fit(self) -> dict:
        """Train to ``total_steps`` (from ``self.state.step``); returns a summary."""
        s = self.settings
        t_start = time.perf_counter()
        self.setup()
        if s.val_before_train and self.state.step == 0 and not self.state.val_history:
            self.validate()
        if self.state.step >= self.total_steps > 0:
            # Resumed from the last step's checkpoint (a job stopped after its last step): nothing
            # to train, but the run still reports its final validation.
            self.validate()
        while self.state.step < self.total_steps:
            if self.hooks.should_stop is not None and self.hooks.should_stop():
                log.info("stop requested before step %d", self.state.step + 1)
                break
            self.train_step()
            step = self.state.step
            last = step == self.total_steps
            if (s.test_freq > 0 and step % s.test_freq == 0) or last:
                self.validate()
            periodic = s.save_freq > 0 and step % s.save_freq == 0
            if self.checkpoint_dir is not None and (periodic or (last and s.save_freq >= 0)):
                self.save_checkpoint(self.checkpoint_dir / f"step_{step}")
        vals = self.state.val_history
        return {
            "steps": self.state.step,
            "total_steps": self.total_steps,
            "val_reward_first": vals[0]["val_reward_mean"] if vals else math.nan,
            "val_reward_last": vals[-1]["val_reward_mean"] if vals else math.nan,
            "val_reward_best": max(v["val_reward_mean"] for v in vals) if vals else math.nan,
            "time_fit_s": time.perf_counter() - t_start,
        }

    def train_step(self) -> dict:
        """One RL step: sample -> reward -> advantages -> update(s) -> sync sampler."""
        self.setup()
        s = self.settings
        step = self.state.step  # 0-based index of this step
        t0 = time.perf_counter()
        examples, epoch = self._train_batch(step)

        # 1-3. Sample rollout.n responses per prompt and score them.
        seeds = _seeds(s.seed, _SEED_TRAIN_SAMPLING, step, len(examples) * s.n)
        rollouts, n_truncated = self._sample(
            "train", examples, s.n, (s.temperature, s.top_p, s.top_k), seeds, first_index=self._data_index(step)
        )
        t_sample = time.perf_counter() - t0
        t1 = time.perf_counter()
        self._score(examples, rollouts)
        rewards = np.array([r.reward for r in rollouts], dtype=np.float64).reshape(len(examples), s.n)
        t_reward = time.perf_counter() - t1

        # 4. Advantages per group of rollout.n, broadcast over the response tokens.
        lengths = np.array([len(r.response_ids) for r in rollouts]).reshape(rewards.shape)
        adv = compute_advantages(
            rewards, s.adv_estimator, norm_adv_by_std_in_grpo=s.norm_adv_by_std_in_grpo, lengths=lengths
        )
        for r, a in zip(rollouts, adv.reshape(-1), strict=True):
            r.advantage = float(a)

        # 5. One optimizer step per mini batch of prompts (whole groups).
        lr = s.lr_at(step, self.total_steps)
        t_fb = t_optim = t_ref = 0.0
        losses, grad_norms, ratio_stats, kls = [], [], [], []
        tokens_trained = 0
        seqs_per_mb = s.mini_batch_size * s.n
        for mb_start in range(0, len(rollouts), seqs_per_mb):
            mb = rollouts[mb_start : mb_start + seqs_per_mb]
            datums = self._datums(mb)
            if s.kl_active:
                t2 = time.perf_counter()
                kls.append(self._apply_kl_penalty(mb, datums))
                t_ref += time.perf_counter() - t2
            self._apply_loss_agg_scale(mb, datums)
            tokens_trained += sum(len(d["input"]) for d in datums)

            t2 = time.perf_counter()
            out = self._forward_backward(datums)
            t_fb += time.perf_counter() - t2
            losses.append(_mean_seq_loss(out, datums))
            ratio_stats.append(_ratio_stats(out, datums, s.clip_low_threshold, s.clip_high_threshold))

            t2 = time.perf_counter()
            grad_norms.append(self._optim_step(lr))
            t_optim += time.perf_counter() - t2

        # 6. Publish the new weights to the sampler, where they have to move (the GPU trainer's
        #    vLLM engines); SkyRL's JAX backends sample from the very adapter optim_step updated.
        t2 = time.perf_counter()
        self.state.step = step + 1
        if not self.engine.sampler_shares_trained_weights:
            self._sync_sampler()
        t_sync = time.perf_counter() - t2

        t_step = time.perf_counter() - t0
        resp_lens = np.array([len(r.response_ids) for r in rollouts])
        metrics = {
            "step": step + 1,
            "epoch": epoch,
            "lr": lr,
            "reward_mean": float(rewards.mean()),
            "reward_std": float(rewards.std()),
            "reward_max": float(rewards.max()),
            "frac_groups_all_equal": float(np.mean(rewards.max(axis=1) == rewards.min(axis=1))),
            "advantage_abs_mean": float(np.abs(adv).mean()),
            "loss": float(np.mean(losses)),
            "grad_norm": _mean_or_nan([g for g in grad_norms if g is not None]),
            "is_ratio_mean": float(np.mean([r[0] for r in ratio_stats])),
            "clip_frac": float(np.mean([r[1] for r in ratio_stats])),
            "logprob_diff_abs_mean": float(np.mean([r[2] for r in ratio_stats])),
            "response_length_mean": float(resp_lens.mean()),
            "frac_stopped": float(np.mean([r.stop_reason == "stop" for r in rollouts])),
            "prompts_truncated": n_truncated,
            "tokens_sampled": int(resp_lens.sum()),
            "tokens_trained": int(tokens_trained),
            "time_sample_s": t_sample,
            "time_forward_backward_s": t_fb,
            "time_optim_s": t_optim,
            "time_other_s": t_step - t_sample - t_fb - t_optim,
            "time_reward_s": t_reward,
            "time_sync_s": t_sync,
            "time_step_s": t_step,
        }
        if s.kl_active:
            metrics["kl"] = float(np.mean(kls))
            metrics["time_ref_forward_s"] = t_ref
        if self.hooks.on_step_end is not None:
            self.hooks.on_step_end(metrics)
        return metrics

    def validate(self) -> dict:
        """Mean reward over the whole val set with the current weights."""
        self.setup()
        s = self.settings
        t0 = time.perf_counter()
        val = self.task.val
        rewards: list[float] = []
        lengths: list[int] = []
        seeds_all = _seeds(s.seed, _SEED_VAL_SAMPLING, 0, len(val) * s.n_val)  # same seeds every validation
        for start in range(0, len(val), s.val_batch_size):
            chunk = val[start : start + s.val_batch_size]
            seeds = seeds_all[start * s.n_val : (start + len(chunk)) * s.n_val]
            sampling = (s.val_temperature, s.val_top_p, s.val_top_k)
            rollouts, _ = self._sample("val", chunk, s.n_val, sampling, seeds, start)
            self._score(chunk, rollouts)
            rewards += [r.reward for r in rollouts]
            lengths += [len(r.response_ids) for r in rollouts]
        r = np.array(rewards) if rewards else np.array([math.nan])
        metrics = {
            "step": self.state.step,
            "val_reward_mean": float(r.mean()),
            "val_reward_std": float(r.std()),
            "val_response_length_mean": float(np.mean(lengths)) if lengths else math.nan,
            "val_num_samples": len(rewards),
            "time_val_s": time.perf_counter() - t0,
        }
        self.state.val_history.append({"step": self.state.step, "val_reward_mean": metrics["val_reward_mean"]})
        if self.hooks.on_validation_end is not None:
            self.hooks.on_validation_end(metrics)
        return metrics

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, path: str | os.PathLike) -> Path:
        """Write ``path/`` = backend training checkpoint + trainer state (atomic rename)."""
        self.setup()
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.backend.save_checkpoint(tmp / f"{self.model_id}.ckpt", self.model_id)
        (tmp / TRAINER_STATE_FILE).write_text(json.dumps(self.state.to_dict(), indent=2))
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
        if path.parent == self.checkpoint_dir:
            _write_latest(path)
        if self.hooks.on_checkpoint is not None:
            self.hooks.on_checkpoint(path, self.state)
        return path

    def load_checkpoint(self, path: str | os.PathLike, load_optimizer: bool = True) -> TrainerState:
        """Restore policy weights (+ optimizer state) and the trainer state from ``path``."""
        self.setup()
        path = Path(path)
        self.backend.load_checkpoint(path / f"{self.model_id}.ckpt", self.model_id, load_optimizer=load_optimizer)
        self.state = TrainerState.from_dict(json.loads((path / TRAINER_STATE_FILE).read_text()))
        self._sync_sampler()
        return self.state

    # ------------------------------------------------------------------ data
    def _data_index(self, step: int) -> int:
        return step * self.settings.train_batch_size

    def _train_batch(self, step: int) -> tuple[list[dict], int]:
        """Prompts of 0-based ``step``: batches of a per-epoch permutation (last partial dropped)."""
        bs = self.settings.train_batch_size
        n = len(self.task.train)
        per_epoch = n // bs
        epoch, pos = divmod(step, per_epoch)
        order = np.random.default_rng([self.settings.seed, _SEED_DATA_ORDER, epoch]).permutation(n)
        idx = order[pos * bs : (pos + 1) * bs]
        return [self.task.train[int(i)] for i in idx], epoch

    def _prompt_ids(self, split: str, example: dict) -> tuple[list[int], bool]:
        """Token ids of a prompt (chat template if the task asks), left-truncated."""
        key = (split, id(example))
        if key not in self._prompt_cache:
            text = example["prompt"]
            if self.task.chat_template and getattr(self.tokenizer, "chat_template", None):
                text = self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
                )
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            limit = self.settings.max_prompt_length
            truncated = len(ids) > limit
            self._prompt_cache[key] = (ids[-limit:] if truncated else ids, truncated)
        return self._prompt_cache[key]

    # ------------------------------------------------------------------ backend calls
    def _sample(
        self,
        split: str,
        examples: Sequence[dict],
        n: int,
        sampling: tuple[float, float, int],
        seeds: Sequence[int],
        first_index: int,
    ) -> tuple[list[Rollout], int]:
        """``n`` responses per example at ``sampling`` = (temperature, top_p, top_k)."""
        from skyrl.tinker import types

        temperature, top_p, top_k = sampling
        assert self._sampler_ckpt is not None
        ckpt_id, ckpt_path = self._sampler_ckpt
        inputs, params, slices, prompts = [], [], [], []
        n_truncated = 0
        for i, ex in enumerate(examples):
            ids, truncated = self._prompt_ids(split, ex)
            n_truncated += truncated
            prompts.append(ids)
            start = len(inputs)
            for _ in range(n):
                inputs.append(types.ModelInput(chunks=[types.EncodedTextChunk(tokens=ids)]))
                params.append(
                    types.SamplingParams(
                        temperature=temperature,
                        top_p=top_p,
                        top_k=top_k,
                        max_tokens=self.settings.max_response_length,
                        seed=int(seeds[len(params)]),
                        stop_tokens=self.stop_token_ids,
                    )
                )
            slices.append((f"{split}-{first_index + i}", self.model_id, start, len(inputs), False, 0))
        batch = types.PreparedSampleBatch(
            all_model_inputs=inputs,
            all_sampling_params=params,
            all_model_ids=[self.model_id] * len(inputs),
            all_checkpoint_ids=[ckpt_id] * len(inputs),
            all_checkpoint_paths=[str(ckpt_path)] * len(inputs),
            all_session_ids=[None] * len(inputs),
            needs_prompt_logprobs=False,
            request_batch_slices=slices,
        )
        results = self.backend.sample(batch)
        rollouts: list[Rollout] = []
        for i, (request_id, *_rest) in enumerate(slices):
            out = results[request_id]
            if isinstance(out, types.ErrorResponse):
                raise RuntimeError(f"backend.sample failed for {request_id}: {out.error}")
            if len(out.sequences) != n:
                raise RuntimeError(f"backend.sample returned {len(out.sequences)} sequences, expected {n}")
            for seq in out.sequences:
                rollouts.append(
                    Rollout(
                        prompt_index=i,
                        prompt_ids=prompts[i],
                        response_ids=list(seq.tokens),
                        logprobs=list(seq.logprobs),
                        stop_reason=seq.stop_reason,
                    )
                )
        return rollouts, n_truncated

    def _score(self, examples: Sequence[dict], rollouts: list[Rollout]) -> None:
        for r in rollouts:
            ex = examples[r.prompt_index]
            r.response_text = self.tokenizer.decode(r.response_ids, skip_special_tokens=True)
            reward = float(self.task.reward_fn(ex["prompt"], r.response_text, ex["ground_truth"]))
            if not math.isfinite(reward):
                raise ValueError(f"task {self.task.name!r}: reward {reward} for prompt {ex['prompt']!r}")
            r.reward = reward

    def _datums(self, rollouts: list[Rollout]) -> list[dict]:
        """Next-token training examples: loss (weight 1) only on the response tokens."""
        datums = []
        for r in rollouts:
            if not r.response_ids:
                continue  # nothing was sampled: nothing to train on
            full = r.prompt_ids + r.response_ids
            n_prompt = len(r.prompt_ids) - 1  # targets that are prompt tokens
            n_resp = len(r.response_ids)
            datums.append(
                {
                    "input": full[:-1],
                    "target": full[1:],
                    "weights": [0.0] * n_prompt + [1.0] * n_resp,
                    "logprobs": [0.0] * n_prompt + [float(x) for x in r.logprobs],
                    "advantages": [0.0] * n_prompt + [r.advantage] * n_resp,
                    "n_prompt": n_prompt,
                    "n_resp": n_resp,
                }
            )
        return datums

    def _apply_loss_agg_scale(self, rollouts: list[Rollout], datums: list[dict]) -> None:
        scales = loss_agg_scales(
            [d["n_resp"] for d in datums],
            self.settings.loss_agg_mode,
            self.engine.backend_reduction,
            self.settings.loss_norm_length or self.settings.max_response_length,
            group_size=self.settings.n,  # a mini batch holds whole groups, in order
            micro_batch=self.settings.legacy_micro_batch,
        )
        for d, scale in zip(datums, scales, strict=True):
            if scale != 1.0:
                d["advantages"] = [a * scale for a in d["advantages"]]

    def _apply_kl_penalty(self, rollouts: list[Rollout], datums: list[dict]) -> float:
        """advantage_t -= kl_beta * (log pi_sample - log pi_base)_t (a per-token KL-in-reward penalty)."""
        out = self._model_pass(datums, self.ref_model_id, "cross_entropy", None, forward_only=True)
        kls = []
        for d, o in zip(datums, out.loss_fn_outputs, strict=True):
            ref = o["logprobs"]["data"]
            p = d["n_prompt"]
            for t in range(p, p + d["n_resp"]):
                k = d["logprobs"][t] - ref[t]
                kls.append(k)
                d["advantages"][t] -= self.settings.kl_beta * k
        return float(np.mean(kls)) if kls else 0.0

    def _forward_backward(self, datums: list[dict]):
        s = self.settings
        config = None
        if s.loss_fn in self.engine.loss_config_for:
            config = {"clip_low_threshold": s.clip_low_threshold, "clip_high_threshold": s.clip_high_threshold}
        return self._model_pass(datums, self.model_id, s.loss_fn, config, forward_only=False)

    def _model_pass(self, datums: list[dict], model_id: str, loss_fn: str, config, forward_only: bool):
        from skyrl.tinker import types

        n = len(datums)
        batch = types.PreparedModelPassBatch(
            all_model_inputs=[types.ModelInput(chunks=[types.EncodedTextChunk(tokens=d["input"])]) for d in datums],
            all_targets=[d["target"] for d in datums],
            all_token_weights=[d["weights"] for d in datums],
            all_sampling_logprobs=[d["logprobs"] for d in datums],
            all_advantages=[d["advantages"] for d in datums],
            all_values=[[] for _ in datums],
            all_returns=[[] for _ in datums],
            all_model_ids=[model_id] * n,
            all_loss_fns=[loss_fn] * n,
            all_loss_fn_configs=[config] * n,
            request_batch_slices=[("batch", model_id, 0, n)],
        )
        results = self.backend.forward(batch) if forward_only else self.backend.forward_backward(batch)
        out = results["batch"]
        if isinstance(out, types.ErrorResponse):
            raise RuntimeError(f"backend.{'forward' if forward_only else 'forward_backward'} failed: {out.error}")
        return out

    def _optim_step(self, lr: float) -> float | None:
        from skyrl.tinker import types

        s = self.settings
        adam = types.AdamParams(
            learning_rate=lr, beta1=s.adam_betas[0], beta2=s.adam_betas[1], eps=s.adam_eps, weight_decay=s.weight_decay
        )
        out = self.backend.optim_step(self.model_id, types.OptimStepInput(adam_params=adam))
        metrics = out.metrics or {}
        g = metrics.get("skyrl.ai/grad_norm")
        return None if g is None else float(g)

    def _sync_sampler(self) -> None:
        """``save_sampler_checkpoint`` under a fresh id; the next ``sample`` uses those weights.

        The id is new on every call (JaxBackend reloads an adapter only when the id
        changes); the superseded file is deleted (JaxBackend always writes one,
        ``persist=False`` notwithstanding).
        """
        self._sync_count += 1
        ckpt_id = f"step{self.state.step:06d}-{self._sync_count}"
        path = self.work_dir / "sampler_weights" / f"{self.model_id}-{ckpt_id}.tar.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.backend.save_sampler_checkpoint(path, self.model_id, persist=False)
        old = self._sampler_ckpt
        self._sampler_ckpt = (ckpt_id, path)
        if old is not None:
            for p in (old[1], old[1].with_name(old[1].name + ".probe")):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)


# ---------------------------------------------------------------------- helpers
def latest_checkpoint(checkpoint_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint under ``checkpoint_dir`` (via its ``latest`` file), or None."""
    d = Path(checkpoint_dir)
    latest = d / "latest"
    if latest.is_file():
        p = d / latest.read_text().strip()
        if (p / TRAINER_STATE_FILE).is_file():
            return p
    steps = sorted(
        (int(p.name.removeprefix("step_")), p)
        for p in d.glob("step_*")
        if p.name.removeprefix("step_").isdigit() and (p / TRAINER_STATE_FILE).is_file()
    )
    return steps[-1][1] if steps else None


def _write_latest(path: Path) -> None:
    tmp = path.parent / "latest.tmp"
    tmp.write_text(path.name + "\n")
    os.replace(tmp, path.parent / "latest")


def _stop_token_ids(tokenizer) -> list[int]:
    """End-of-turn ids: the tokenizer's eos plus Qwen-style <|im_end|> / <|endoftext|> if present."""
    ids = []
    if tokenizer.eos_token_id is not None:
        ids.append(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    for tok in ("<|im_end|>", "<|endoftext|>"):
        if tok in vocab and vocab[tok] not in ids:
            ids.append(int(vocab[tok]))
    return ids


def _seeds(seed: int, stream: int, step: int, count: int) -> list[int]:
    """``count`` sampler seeds (31-bit), a pure function of (seed, stream, step)."""
    state = np.random.SeedSequence([seed, stream, step]).generate_state(max(count, 1))
    return [int(x) & 0x7FFFFFFF for x in state[:count]]


def _mean_or_nan(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else math.nan


def _response_slice(d: dict) -> slice:
    return slice(d["n_prompt"], d["n_prompt"] + d["n_resp"])


def loss_agg_scales(
    n_resp: Sequence[int],
    mode: str,
    backend_reduction: str,
    max_len: int,
    group_size: int = 1,
    micro_batch: int = 1,
) -> list[float]:
    """Per-response factors on the advantages that turn the backend's own reduction into ``mode``.

    Both losses are linear in the advantage up to a positive factor, so scaling response i's
    advantages by ``want_i / has_i`` gives each of its tokens the weight ``mode`` asks for, with B
    sequences and N tokens in the mini batch and n_i tokens in sequence i (SkyRL's
    ``apply_loss_reduction_to_advantages_minibatch`` for its names):

    - token-mean (``token_mean``): 1/N;
    - seq-mean-token-mean (``sequence_mean``): 1/(B n_i);
    - seq-mean-token-sum-norm (``seq_mean_token_sum_norm``, Dr. GRPO): 1/(B max_len);
    - seq-mean-token-sum (rLLM/verl): 1/B;
    - ``prompt_mean``: 1/(G T_g), G prompt groups of ``group_size`` consecutive sequences, T_g the
      tokens of i's group;
    - ``token_mean_legacy``: 1/(K T_k), K micro batches of ``micro_batch`` consecutive sequences,
      T_k the tokens of i's micro batch.

    ``has_i`` = 1/(B n_i) for a backend that averages each sequence then the batch (SkyRL's JAX
    backend), 1 for one that sums the tokens (SkyRL's GPU trainer in Tinker mode).
    """
    if not n_resp:
        return []
    lengths = [max(n, 1) for n in n_resp]
    b, total = len(lengths), sum(lengths)

    def chunk_tokens(size: int) -> tuple[int, list[int]]:
        """(number of chunks, tokens of each sequence's chunk) for consecutive chunks of `size`."""
        size = max(size, 1)
        sums = [sum(lengths[i : i + size]) for i in range(0, b, size)]
        return len(sums), [sums[i // size] for i in range(b)]

    if mode == "prompt_mean":
        count, tokens = chunk_tokens(group_size)
    elif mode == "token_mean_legacy":
        count, tokens = chunk_tokens(micro_batch)
    scales = []
    for i, n in enumerate(lengths):
        if mode == "token-mean":
            want = 1 / total
        elif mode == "seq-mean-token-mean":
            want = 1 / (b * n)
        elif mode == "seq-mean-token-sum-norm":
            want = 1 / (b * max_len)
        elif mode == "seq-mean-token-sum":
            want = 1 / b
        elif mode in ("prompt_mean", "token_mean_legacy"):
            want = 1 / (count * tokens[i])
        else:
            raise ValueError(f"unknown loss_agg_mode {mode!r}")
        has = 1.0 if backend_reduction == "token-sum" else 1 / (b * n)
        scales.append(want / has)
    return scales


def _mean_seq_loss(out, datums: list[dict]) -> float:
    """The backend's objective: mean over sequences of (sum of token losses / response tokens).

    SkyRL's GPU trainer returns no per-token losses for RL losses; it reports the objective
    (already reduced by the loop's scaling) as a metric."""
    if out.loss_fn_outputs and "elementwise_loss" not in out.loss_fn_outputs[0]:
        return float((out.metrics or {}).get("total_loss:sum", math.nan))
    per_seq = []
    for d, o in zip(datums, out.loss_fn_outputs, strict=True):
        el = o["elementwise_loss"]["data"][_response_slice(d)]
        per_seq.append(sum(el) / max(d["n_resp"], 1))
    return float(np.mean(per_seq)) if per_seq else 0.0


def _ratio_stats(out, datums: list[dict], low: float, high: float) -> tuple[float, float, float]:
    """(mean importance ratio, fraction outside [low, high], mean |logp_train - logp_sample|)."""
    diffs = []
    for d, o in zip(datums, out.loss_fn_outputs, strict=True):
        sl = _response_slice(d)
        diffs.append(np.asarray(o["logprobs"]["data"][sl]) - np.asarray(d["logprobs"][sl]))
    if not diffs:
        return 1.0, 0.0, 0.0
    diff = np.concatenate(diffs)
    ratio = np.exp(diff)
    return float(ratio.mean()), float(np.mean((ratio < low) | (ratio > high))), float(np.abs(diff).mean())
