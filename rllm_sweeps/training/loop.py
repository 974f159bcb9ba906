"""The RL loop against SkyRL's ``AbstractBackend`` (JAX on CPU, one GPU, Ray; FSDP/Megatron).

It trains on episodes of a workflow (rllm_sweeps/workflows: single-turn by default, multi-turn
environments, solver-judge). One training step, top to bottom (:meth:`RLTrainer.train_step`):

1. take ``data.train_batch_size`` prompts (a fixed shuffle per epoch, a pure
   function of ``trainer.seed`` and the step: no hidden RNG state);
2. run ``rollout.n`` episodes per prompt, all in flight at once: every model call of every
   episode and role goes through one rollout client, which batches them into ``backend.sample``
   calls (at most ``data.max_response_length`` tokens, ``rollout.train.{temperature,top_p}`` and
   SkyRL's ``generator.sampling_params.top_k``, stopping at the tokenizer's end-of-turn token;
   the sampler returns the sampled tokens' logprobs);
3. the workflow sets each trajectory's reward (the task's reward function, or the environment's);
   an episode that raised is recorded with its termination reason and not trained on;
4. trajectories are grouped by (task, role) across the episodes of a prompt; one advantage per
   trajectory from its group (``algorithm.adv_estimator``, or the role's in
   ``workflow.role_estimators``), broadcast over the policy's tokens; with
   ``algorithm.use_kl_loss`` and ``kl_beta > 0``, minus ``kl_beta`` x the
   per-token log-ratio of the sampling policy to the base model (a KL penalty
   folded into the advantage, as Tinker does; the base model is an untrained
   second LoRA adapter, one extra ``backend.forward`` per mini batch);
5. ``data.train_batch_size / trainer.mini_batch_size`` optimizer steps over the trajectories
   (whole groups for the single-turn workflow), each ``backend.forward_backward`` (loss only on
   the policy's own tokens: prompts and environment observations are masked) with loss
   ``algorithm.loss_fn`` (``ppo``: clip
   ``1 - eps_clip`` .. ``1 + eps_clip_high``; ``cispo``: SkyRL's CISPO clip range;
   ``importance_sampling``; on SkyRL's GPU trainer any SkyRL policy loss, with
   its parameters from ``skyrl.train``), then ``backend.optim_step`` (Adam with
   ``trainer.lr`` at this step's schedule, betas, weight decay);
6. ``backend.save_sampler_checkpoint``: the sampler uses the new weights next (only where the
   weights move: SkyRL's JAX backends sample from the adapter they train, published once).

Validation (:meth:`RLTrainer.validate`) runs ``rollout.n_val`` episodes per
val prompt at ``rollout.val.temperature`` (0 = greedy) and reports the mean trajectory
reward (workflows with roles or turns: per role and per episode too); it runs before
training (``trainer.val_before_train``), every ``trainer.test_freq`` steps and after the last step.

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
from rllm_sweeps.training.episodes import (
    assign_advantages,
    datum,
    group_trajectories,
    mini_batches,
    trained_positions,
    trajectory_sequences,
)
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.workflows.base import Workflow
from rllm_sweeps.workflows.chat import ChatFormat
from rllm_sweeps.workflows.client import RolloutClient, Sampling, SeedPlan
from rllm_sweeps.workflows.episode import Episode
from rllm_sweeps.workflows.metrics import episode_metrics
from rllm_sweeps.workflows.rollout import run_episodes
from rllm_sweeps.workflows.single_turn import SingleTurnSettings, SingleTurnWorkflow

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
        workflow: what one episode is (``rllm_sweeps.workflows``; default: the single-turn
            workflow on ``task``).
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
        workflow: Workflow | None = None,
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
        self.workflow = workflow or SingleTurnWorkflow(task, SingleTurnSettings())
        self.chat = ChatFormat(tokenizer, task.chat_template)
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
        """One RL step: episodes -> groups -> advantages -> update(s) -> sync sampler."""
        self.setup()
        s = self.settings
        step = self.state.step  # 0-based index of this step
        t0 = time.perf_counter()
        examples, epoch = self._train_batch(step)

        # 1-3. rollout.n episodes per prompt, all in flight at once; the workflow sets the rewards.
        seeds = SeedPlan(s.seed, _SEED_TRAIN_SAMPLING, step, len(examples) * s.n)
        episodes, t_sample = self._run_episodes(examples, s.n, self._sampling("train"), seeds, self._data_index(step))
        t_reward = time.perf_counter() - t0 - t_sample  # the workflow's own time: rewards, environments

        # 4. Advantages per (task, role) group, broadcast over the policy's tokens.
        groups = group_trajectories(episodes)
        scored = assign_advantages(
            groups,
            s.adv_estimator,
            self.workflow.settings.role_estimators,
            norm_adv_by_std_in_grpo=s.norm_adv_by_std_in_grpo,
        )
        if not scored:
            raise RuntimeError(f"step {step + 1}: no episode produced a trajectory to train on")

        # 5. One optimizer step per mini batch of trajectories (batch / mini batch of them).
        lr = s.lr_at(step, self.total_steps)
        t_fb = t_optim = t_ref = 0.0
        losses, grad_norms, ratio_stats, kls = [], [], [], []
        tokens_trained = 0
        for mb in mini_batches(scored, s.train_batch_size // s.mini_batch_size):
            datums = [datum(q) for t in mb for q in trajectory_sequences(t.trajectory, t.advantage, t.group)]
            if not datums:
                continue  # nothing sampled in this mini batch: nothing to train on
            if s.kl_active:
                t2 = time.perf_counter()
                kls.append(self._apply_kl_penalty(datums))
                t_ref += time.perf_counter() - t2
            self._apply_loss_agg_scale(datums)
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
        rewards = np.array([t.trajectory.reward for t in scored], dtype=np.float64)
        adv = np.array([t.advantage for t in scored], dtype=np.float64)
        steps = [st for e in episodes for tr in e.trajectories for st in tr.steps]
        resp_lens = np.array([len(st.response_ids) for st in steps])
        metrics = {
            "step": step + 1,
            "epoch": epoch,
            "lr": lr,
            "reward_mean": float(rewards.mean()),
            "reward_std": float(rewards.std()),
            "reward_max": float(rewards.max()),
            "frac_groups_all_equal": float(np.mean([_all_equal(g) for g in groups.values()])),
            "advantage_abs_mean": float(np.abs(adv).mean()),
            "loss": _mean_or_nan(losses),
            "grad_norm": _mean_or_nan([g for g in grad_norms if g is not None]),
            "is_ratio_mean": _mean_or_nan([r[0] for r in ratio_stats]),
            "clip_frac": _mean_or_nan([r[1] for r in ratio_stats]),
            "logprob_diff_abs_mean": _mean_or_nan([r[2] for r in ratio_stats]),
            "response_length_mean": float(resp_lens.mean()) if len(steps) else math.nan,
            "frac_stopped": float(np.mean([st.stop_reason == "stop" for st in steps])) if steps else math.nan,
            "prompts_truncated": sum(e.prompt_truncated for e in episodes if e.rollout_index == 0),
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
        if self.workflow.reports_episode_metrics():
            metrics.update(episode_metrics(episodes, prefix="train_"))
        if s.kl_active:
            metrics["kl"] = _mean_or_nan(kls)
            metrics["time_ref_forward_s"] = t_ref
        if self.hooks.on_step_end is not None:
            self.hooks.on_step_end(metrics)
        return metrics

    def validate(self) -> dict:
        """Mean reward over the whole val set with the current weights (workflows: per role too)."""
        self.setup()
        s = self.settings
        t0 = time.perf_counter()
        val = self.task.val
        episodes: list[Episode] = []
        for start in range(0, len(val), s.val_batch_size):
            chunk = val[start : start + s.val_batch_size]
            # Seeds of episode e of the whole val set, the same at every validation.
            seeds = SeedPlan(s.seed, _SEED_VAL_SAMPLING, 0, len(val) * s.n_val)
            got, _ = self._run_episodes(
                chunk, s.n_val, self._sampling("val"), seeds, start, first_episode=start * s.n_val
            )
            episodes += got
        trajectories = [t for e in episodes for t in e.trajectories]
        r = np.array([t.reward for t in trajectories]) if trajectories else np.array([math.nan])
        lengths = [len(st.response_ids) for t in trajectories for st in t.steps]
        metrics = {
            "step": self.state.step,
            "val_reward_mean": float(r.mean()),
            "val_reward_std": float(r.std()),
            "val_response_length_mean": float(np.mean(lengths)) if lengths else math.nan,
            "val_num_samples": len(trajectories),
            "time_val_s": time.perf_counter() - t0,
        }
        if self.workflow.reports_episode_metrics():
            metrics.update(episode_metrics(episodes, prefix="val_"))
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

    # ------------------------------------------------------------------ episodes
    def _sampling(self, phase: str) -> Sampling:
        s = self.settings
        if phase == "train":
            return Sampling(s.temperature, s.top_p, s.top_k, s.max_response_length)
        return Sampling(s.val_temperature, s.val_top_p, s.val_top_k, s.max_response_length)

    def _run_episodes(
        self,
        examples: Sequence[dict],
        n: int,
        sampling: Sampling,
        seeds: SeedPlan,
        first_index: int,
        first_episode: int = 0,
    ) -> tuple[list[Episode], float]:
        """(``n`` episodes per example, seconds spent in backend.sample). ``first_index``: the first
        example's index (the episodes' task ids); ``first_episode``: its first episode's seed index."""
        assert self._sampler_ckpt is not None
        client = RolloutClient(self.backend, self.model_id, self._sampler_ckpt, self.stop_token_ids, sampling, seeds)
        episodes = run_episodes(
            self.workflow,
            examples,
            n,
            client,
            self.chat,
            first_episode=first_episode,
            first_task_index=first_index,
            max_prompt_length=self.settings.max_prompt_length,
            max_response_length=self.settings.max_response_length,
        )
        return episodes, client.sample_time_s

    def _apply_loss_agg_scale(self, datums: list[dict]) -> None:
        scales = loss_agg_scales(
            [d["n_resp"] for d in datums],
            self.settings.loss_agg_mode,
            self.engine.backend_reduction,
            self.settings.loss_norm_length or self.settings.max_response_length,
            group_size=self.settings.n,
            micro_batch=self.settings.legacy_micro_batch,
            groups=[d["group"] for d in datums],
        )
        for d, scale in zip(datums, scales, strict=True):
            if scale != 1.0:
                d["advantages"] = [a * scale for a in d["advantages"]]

    def _apply_kl_penalty(self, datums: list[dict]) -> float:
        """advantage_t -= kl_beta * (log pi_sample - log pi_base)_t (a per-token KL-in-reward penalty)."""
        out = self._model_pass(datums, self.ref_model_id, "cross_entropy", None, forward_only=True)
        kls = []
        for d, o in zip(datums, out.loss_fn_outputs, strict=True):
            ref = o["logprobs"]["data"]
            for t in trained_positions(d):
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


def _mean_or_nan(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else math.nan


def _all_equal(group: list) -> bool:
    rewards = [t.reward for t in group]
    return max(rewards) == min(rewards)


def loss_agg_scales(
    n_resp: Sequence[int],
    mode: str,
    backend_reduction: str,
    max_len: int,
    group_size: int = 1,
    micro_batch: int = 1,
    groups: Sequence[int] | None = None,
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
    - ``prompt_mean``: 1/(G T_g), G groups, T_g the tokens of i's group: ``groups`` gives each
      sequence's group (a workflow's (task, role) groups), else groups of ``group_size``
      consecutive sequences;
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

    if mode == "prompt_mean" and groups is not None:
        sums: dict[int, int] = {}
        for g, n in zip(groups, lengths, strict=True):
            sums[g] = sums.get(g, 0) + n
        count, tokens = len(sums), [sums[g] for g in groups]
    elif mode == "prompt_mean":
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
        el = np.asarray(o["elementwise_loss"]["data"])[trained_positions(d)]
        per_seq.append(float(el.sum()) / max(d["n_resp"], 1))
    return float(np.mean(per_seq)) if per_seq else 0.0


def _ratio_stats(out, datums: list[dict], low: float, high: float) -> tuple[float, float, float]:
    """(mean importance ratio, fraction outside [low, high], mean |logp_train - logp_sample|)."""
    diffs = []
    for d, o in zip(datums, out.loss_fn_outputs, strict=True):
        sl = trained_positions(d)
        diffs.append(np.asarray(o["logprobs"]["data"])[sl] - np.asarray(d["logprobs"])[sl])
    if not diffs:
        return 1.0, 0.0, 0.0
    diff = np.concatenate(diffs)
    ratio = np.exp(diff)
    return float(ratio.mean()), float(np.mean((ratio < low) | (ratio > high))), float(np.abs(diff).mean())
