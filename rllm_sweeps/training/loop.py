"""The RL loop against SkyRL's ``AbstractBackend`` (JAX on CPU, one GPU, Ray; FSDP/Megatron).

It trains on episodes of a workflow (rllm_sweeps/workflows: single-turn by default, multi-turn
environments, solver-judge). One training step, top to bottom (:meth:`RLTrainer.train_step`):

1. take ``data.train_batch_size`` prompts (a fixed shuffle per epoch, a pure
   function of ``trainer.seed`` and the step: no hidden RNG state; prompts.py);
2. run ``rollout.n`` episodes per prompt, all in flight at once: every model call of every
   episode and role goes through one rollout client, which batches them into ``backend.sample``
   calls (at most ``data.max_response_length`` tokens, ``rollout.train.{temperature,top_p}`` and
   SkyRL's ``generator.sampling_params.top_k``, stopping at the tokenizer's end-of-turn token;
   the sampler returns the sampled tokens' logprobs);
3. the workflow sets each trajectory's reward (the task's reward function, or the environment's);
   an episode that raised is recorded with its termination reason and not trained on; with SkyRL's
   ``dynamic_sampling`` (``filter``, ``replace``), further prompt batches are rolled out until
   enough prompts have a reward signal (SkyRL's own ``handle_dynamic_sampling``; dynamic_sampling.py);
4. SkyRL's reward shaping (reward_shaping.py: overlong filtering, DAPO's overlong buffer penalty,
   the zero-variance filter) and, with ``use_kl_in_reward``, its KL penalty in the reward
   (kl_reward.py: the reference's log-probs, SkyRL's KL estimator and controller); trajectories
   are grouped by (task, role) across the episodes of a prompt; one advantage per trajectory from
   its group (``algorithm.adv_estimator``, or the role's in ``workflow.role_estimators``;
   episodes.py; batch-normalized with ``advantage_batch_normalize``), broadcast over the policy's
   tokens; with ``algorithm.use_kl_loss`` and ``kl_beta > 0``, the KL to the reference (an untrained
   second LoRA adapter: the base model; one extra ``backend.forward`` per mini batch): on the JAX
   engine minus ``kl_beta`` x the per-token log-ratio of the sampling policy to it in the advantage
   (as Tinker does; datums.py), on SkyRL's GPU trainer SkyRL's KL loss term added to the policy loss
   as a custom loss (step 5; custom_loss.py);
5. ``update_epochs_per_batch`` passes, each of ``data.train_batch_size / trainer.mini_batch_size``
   optimizer steps over the trajectories that carry loss (whole groups for the single-turn
   workflow), each ``backend.forward_backward`` (loss only on the policy's own tokens: prompts and
   environment observations are masked) with loss ``algorithm.loss_fn`` (``ppo``: clip
   ``1 - eps_clip`` .. ``1 + eps_clip_high``; ``cispo``: SkyRL's CISPO clip range;
   ``importance_sampling``; any other SkyRL policy loss: SkyRL's GPU trainer computes it, on the JAX
   engine the loop does, as a custom loss, custom_loss.py), reduced as ``algorithm.loss_agg_mode``
   says (datums.py), then ``backend.optim_step`` (Adam with ``trainer.lr`` at this step's
   schedule, betas, weight decay; the JAX engine clips to ``trainer.max_grad_norm`` first);
6. ``backend.save_sampler_checkpoint``: the sampler uses the new weights next (only where the
   weights move: SkyRL's JAX backends sample from the adapter they train, published once).

A NaN or infinite number (a reward, the sampler's log-probabilities, a mini batch's loss, ratios or
gradient norm) ends the run where it first appears: ``Diverged`` (divergence.py), which the job
records as a failure of its own kind, never a completed run.

Validation (:meth:`RLTrainer.validate`) runs ``rollout.n_val`` episodes per
val prompt at ``rollout.val.temperature`` (0 = greedy) and reports the mean trajectory
reward (workflows with roles or turns: per role and per episode too); it runs before
training (``trainer.val_before_train``), every ``trainer.test_freq`` steps and after the last step.

Beside the loop: policy.py (every backend call but sampling), prompts.py (each phase's prompts
and seeds), episodes.py and datums.py (episodes -> training data), metrics.py (what a step and a
validation report), checkpoints.py (save / resume: :meth:`RLTrainer.load_checkpoint` before
:meth:`RLTrainer.fit`), timers.py.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rllm_sweeps.records.schedule import Schedule
from rllm_sweeps.tasks.base import Task
from rllm_sweeps.training.checkpoints import (
    TrainerState,
    checkpoint_name,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from rllm_sweeps.training.custom_loss import algorithm_config, custom_loss_step, skyrl_loss_function
from rllm_sweeps.training.datums import Datum, apply_kl_penalty, apply_loss_agg, mean_log_ratio, mini_batch_datums
from rllm_sweeps.training.divergence import check_finite
from rllm_sweeps.training.dynamic_sampling import DynamicSampler, SampledBatch
from rllm_sweeps.training.engine_traits import EngineTraits
from rllm_sweeps.training.episodes import (
    GroupKey,
    ScoredTrajectory,
    assign_advantages,
    batch_normalized,
    group_trajectories,
    mini_batches,
)
from rllm_sweeps.training.kl_reward import RewardKL, kl_controller, reward_kl
from rllm_sweeps.training.metrics import MiniBatchStats, StepOutcome, StepTimes, train_metrics, val_metrics
from rllm_sweeps.training.policy import Policy
from rllm_sweeps.training.prompts import PromptBatch, train_batch, val_batches
from rllm_sweeps.training.reward_shaping import shape_rewards
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.training.timers import PhaseTimer
from rllm_sweeps.workflows.base import Workflow
from rllm_sweeps.workflows.chat import ChatFormat, stop_token_ids
from rllm_sweeps.workflows.episode import Episode, Trajectory
from rllm_sweeps.workflows.rollout import run_episodes
from rllm_sweeps.workflows.single_turn import SingleTurnSettings, SingleTurnWorkflow

log = logging.getLogger(__name__)


@dataclass
class LoopHooks:
    """Callbacks (all optional). Metrics are flat dicts of numbers (metrics.py)."""

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
            the newest complete one, and only the newest ``max_ckpts_to_keep`` stay.
        engine: what the backend's engine does itself (its engine class's ``traits``,
            rllm_sweeps/engines/).
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
        engine: EngineTraits,
        workflow: Workflow | None = None,
        schedule: Schedule | None = None,
    ) -> None:
        self.settings = s = settings
        self.base_settings = settings
        self.schedule = schedule or Schedule()
        self.engine = engine
        self.policy = Policy(backend, model_id, work_dir, reference_worker=engine.reference_worker)
        self.task = task
        self.hooks = hooks or LoopHooks()
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir is not None else None
        self.state = TrainerState()
        self.total_steps = s.total_steps(len(task.train))
        self.stop_token_ids = stop_token_ids(tokenizer)
        self.workflow = workflow or SingleTurnWorkflow(task, SingleTurnSettings())
        self.chat = ChatFormat(
            tokenizer, task.chat_template, s.chat_template_kwargs, conversation=s.use_conversation_multi_turn
        )
        self.loss_config = self._loss_config(s)
        self._is_setup = False
        if self.total_steps > 0 and len(task.train) < s.train_batch_size:
            raise ValueError(
                f"task {task.name!r} has {len(task.train)} train examples < data.train_batch_size={s.train_batch_size}"
            )

    def _loss_config(self, s: LoopSettings) -> dict | None:
        clip = {"clip_low_threshold": s.clip_low_threshold, "clip_high_threshold": s.clip_high_threshold}
        return clip if s.loss_fn in self.engine.loss_config_for else None

    def use_settings_of(self, step: int) -> None:
        """The schedule's settings for 0-based step `step` (a PBT trial's, a replay's) in force."""
        if self.schedule.segments:
            self.settings = self.schedule.apply(self.base_settings, step)
            self.loss_config = self._loss_config(self.settings)

    def setup(self) -> None:
        """Create the policy (LoRA + optimizer) in the backend and publish it to the sampler."""
        if self._is_setup:
            return
        self.policy.create(self.settings)
        self._is_setup = True
        self.policy.sync_sampler(self.state.step)

    # ------------------------------------------------------------------ main loop
    def fit(self) -> None:
        """Train to ``total_steps`` from ``self.state.step``; what it did is in ``self.state`` and
        what the hooks were given."""
        s = self.settings
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
                self.save_checkpoint(self.checkpoint_dir / checkpoint_name(step))

    def train_step(self) -> dict:
        """One RL step: episodes -> groups -> rewards shaped -> advantages -> update(s) -> sync
        sampler; its metrics."""
        self.setup()
        step = self.state.step  # 0-based index of this step
        self.use_settings_of(step)
        s = self.settings
        timer = PhaseTimer()

        # 1-3. rollout.n episodes per prompt, all in flight at once; the workflow sets the rewards.
        #      With dynamic sampling, further prompt batches until enough prompts have a signal.
        sampled = self._sample(step, timer)
        groups = sampled.groups
        check_finite((("reward", t.reward) for g in groups.values() for t in g), step + 1, "the rewards")

        # 4. SkyRL's reward shaping (overlong filtering and penalty, the zero-variance filter), then
        #    its KL penalty in the reward; advantages per (task, role) group, broadcast over the
        #    policy's tokens (batch-normalized if asked).
        shaping = shape_rewards(groups, s)
        reward_kl = self._reward_kl(groups, timer) if s.use_kl_in_reward else None
        scored = assign_advantages(
            groups,
            s.adv_estimator,
            self.workflow.settings.role_estimators,
            norm_adv_by_std_in_grpo=s.norm_adv_by_std_in_grpo,
            penalties=reward_kl.penalties if reward_kl is not None else None,
        )
        if not scored and sampled.skipped is None:
            raise RuntimeError(f"step {step + 1}: no episode produced a trajectory to train on")
        if s.advantage_batch_normalize:
            scored = batch_normalized(scored)

        # 5. update_epochs_per_batch passes, each one optimizer step per mini batch of trajectories
        #    (batch / mini batch of them); masked trajectories (shaping) carry no loss.
        lr = s.lr_at(step, self.total_steps)
        #    A non-finite number ends the run where it first appears (divergence.py).
        trained = [t for t in scored if id(t.trajectory) not in shaping.masked]
        #    Nothing to train on (dynamic sampling found no signal, shaping masked every reply): the
        #    step is skipped, saying why, not an error and not a silent no-op.
        skipped = sampled.skipped or (shaping.why_all_masked(s) if scored and not trained else None)
        if skipped is not None:
            log.warning("step %d skipped: %s", step + 1, skipped)
        passes = [
            mb
            for _ in range(s.update_epochs_per_batch)
            for mb in mini_batches(trained, s.train_batch_size // s.mini_batch_size)
        ]
        updates = [self._update(mb, lr, timer, f"mini batch {i} of {len(passes)}") for i, mb in enumerate(passes, 1)]

        # 6. Publish the new weights to the sampler, where they have to move (the GPU trainer's
        #    vLLM engines); SkyRL's JAX backends sample from the very adapter optim_step updated.
        with timer.phase("sync"):
            self.state.step = step + 1
            if not self.engine.sampler_shares_trained_weights:
                self.policy.sync_sampler(self.state.step)

        outcome = StepOutcome(
            step=step + 1,
            epoch=sampled.epoch,
            lr=lr,
            episodes=sampled.rolled_out,
            groups=groups,
            scored=scored,
            updates=[u for u in updates if u is not None],
            times=StepTimes.from_timer(timer),
            shaping=shaping,
            sampled=sampled if s.dynamic_sampling_type else None,
            reward_kl=reward_kl,
            skipped=skipped,
        )
        metrics = train_metrics(outcome, s, per_episode=self.workflow.reports_episode_metrics())
        if self.hooks.on_step_end is not None:
            self.hooks.on_step_end(metrics)
        return metrics

    def _sample(self, step: int, timer: PhaseTimer) -> SampledBatch:
        """The step's episodes: one prompt batch, or with ``dynamic_sampling`` as many as it takes
        (each further batch advances the data position, ``state.extra_batches``)."""
        s = self.settings
        sampler = DynamicSampler(s, seed=(s.seed, step)) if s.dynamic_sampling_type else None
        rolled_out: list[Episode] = []
        while True:
            batch = train_batch(self.task.train, s, step + self.state.extra_batches)
            with timer.phase("rollout"):
                episodes, sample_s = self._run_episodes(batch)
            timer.add("sample", sample_s)
            rolled_out += episodes
            if sampler is None:
                return SampledBatch.whole(episodes, group_trajectories(episodes), batch.epoch)
            if not sampler.add(episodes):
                return sampler.result(rolled_out, batch.epoch)
            self.state.extra_batches += 1

    def _reward_kl(self, groups: Mapping[GroupKey, list[Trajectory]], timer: PhaseTimer) -> RewardKL:
        """SkyRL's KL penalty in the reward (kl_reward.py): the reference's forward over every
        trajectory, the penalties at the controller's coefficient, then the controller's update."""
        s = self.settings
        trajectories = list({id(t): t for group in groups.values() for t in group}.values())
        per_trajectory = [mini_batch_datums([ScoredTrajectory(t, 0.0, 0)]) for t in trajectories]
        with timer.phase("ref_forward"):
            refs = iter(self.policy.reference_logprobs([d for datums in per_trajectory for d in datums]))
        controller = kl_controller(s, self.state.kl_coef)
        kl = reward_kl(
            [id(t) for t in trajectories],
            per_trajectory,
            [[next(refs) for _ in datums] for datums in per_trajectory],
            s.kl_estimator_type,
            controller.value,
        )
        controller.update(current=kl.avg_kl, n_steps=len(trajectories))
        self.state.kl_coef = float(controller.value)
        return kl

    def _update(
        self, mini_batch: Sequence[ScoredTrajectory], lr: float, timer: PhaseTimer, where: str
    ) -> MiniBatchStats | None:
        """One optimizer step on a mini batch's trajectories (None: nothing sampled, nothing to train).
        Diverged before the optimizer step if the sampler's log-probabilities or the loss are not
        finite (the weights stay as they were), after it if the gradient norm is not."""
        s = self.settings
        step = self.state.step + 1
        datums = mini_batch_datums(mini_batch)
        if not datums:
            return None
        check_finite((("sampler logprob", lp) for d in datums for lp in d.logprobs), step, where)
        kl = reference = None
        if s.kl_active:
            with timer.phase("ref_forward"):
                reference = self.policy.reference_logprobs(datums)
            kl = mean_log_ratio(datums, reference)
            if self.engine.kl_loss_in_advantages:
                apply_kl_penalty(datums, reference, s.kl_beta)
                reference = None  # folded in: the loss has no KL term of its own
        if self.engine.computes(s.loss_fn) and reference is None:
            apply_loss_agg(datums, s, self.engine.backend_reduction)
            with timer.phase("forward_backward"):
                out = self.policy.forward_backward(datums, s.loss_fn, self.loss_config)
            stats = MiniBatchStats.measure(out, datums, s.clip_low_threshold, s.clip_high_threshold, kl)
        else:  # a loss the backend lacks, or its KL loss term (engine_traits.py)
            stats = self._custom_loss_pass(datums, kl, timer, reference)
        check_finite(vars(stats).items(), step, where)
        with timer.phase("optim"):
            stats.grad_norm = self.policy.optim_step(lr, s)
        check_finite([("grad_norm", stats.grad_norm)], step, where)
        return stats

    def _custom_loss_pass(
        self, datums: list[Datum], kl: float | None, timer: PhaseTimer, reference: list | None = None
    ) -> MiniBatchStats:
        """Gradients of a SkyRL policy loss the backend does not compute (custom_loss.py): a forward
        for the current log-probs, SkyRL's loss (+ its KL loss term against ``reference``, the
        reference adapter's log-probs) and its gradient here, then forward_backward."""
        s = self.settings
        apply_loss_agg(datums, s, "token-sum")  # SkyRL's policy losses sum their tokens
        with timer.phase("forward_backward"):
            current = self.policy.current_logprobs(datums)
            loss_fn = skyrl_loss_function(s.loss_fn)
            custom = custom_loss_step(
                datums, current, algorithm_config(s), loss_fn, self.engine.backend_reduction, reference
            )
            out = self.policy.forward_backward(custom.datums, "importance_sampling", None)
        # Ratios against the sampler's log-probs (the datums'), the loss SkyRL's function computed.
        stats = MiniBatchStats.measure(out, datums, s.clip_low_threshold, s.clip_high_threshold, kl)
        stats.loss = custom.loss
        return stats

    def validate(self) -> dict:
        """Mean reward over the whole val set with the current weights (workflows: per role too)."""
        self.setup()
        timer = PhaseTimer()
        episodes = [e for batch in val_batches(self.task.val, self.settings) for e in self._run_episodes(batch)[0]]
        check_finite((("reward", t.reward) for e in episodes for t in e.trajectories), self.state.step, "validation")
        metrics = val_metrics(
            self.state.step, episodes, timer.elapsed(), per_episode=self.workflow.reports_episode_metrics()
        )
        self.state.val_history.append({"step": self.state.step, "val_reward_mean": metrics["val_reward_mean"]})
        if self.hooks.on_validation_end is not None:
            self.hooks.on_validation_end(metrics)
        return metrics

    def _run_episodes(self, batch: PromptBatch) -> tuple[list[Episode], float]:
        """(the batch's episodes, seconds spent in backend.sample)."""
        client = self.policy.rollout_client(self.stop_token_ids, batch.sampling, batch.seeds)
        episodes = run_episodes(
            self.workflow,
            batch.examples,
            batch.n,
            client,
            self.chat,
            first_episode=batch.first_episode,
            first_task_index=batch.first_index,
            max_prompt_length=self.settings.max_prompt_length,
            max_response_length=self.settings.max_response_length,
            generator=self.settings.generator,
        )
        return episodes, client.sample_time_s

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self, path: str | os.PathLike) -> Path:
        """Write ``path/`` = backend training checkpoint + trainer state (checkpoints.py)."""
        self.setup()
        path = Path(path)
        in_job = path.parent == self.checkpoint_dir
        save_checkpoint(path, self.policy, self.state, mark_latest=in_job)
        if in_job:
            prune_checkpoints(path.parent, self.settings.max_ckpts_to_keep)
        if self.hooks.on_checkpoint is not None:
            self.hooks.on_checkpoint(path, self.state)
        return path

    def load_checkpoint(self, path: str | os.PathLike, load_optimizer: bool = True) -> TrainerState:
        """Restore policy weights (+ optimizer state) and the trainer state from ``path``."""
        self.setup()
        self.state = load_checkpoint(Path(path), self.policy, load_optimizer)
        self.policy.sync_sampler(self.state.step)
        return self.state
