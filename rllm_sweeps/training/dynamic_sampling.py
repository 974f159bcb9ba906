"""SkyRL's dynamic sampling (``trainer.algorithm.dynamic_sampling``) on the loop's episodes.

``filter`` (DAPO) drops the prompts whose responses all got the same reward and samples further
prompt batches until ``data.train_batch_size`` prompts with a signal are collected. ``replace``
(POLARIS) replaces those prompts' responses with copies of other prompts' when more than
``min_replace_ratio`` of the batch has a signal, else samples a fresh batch.

At most ``max_sample_batches`` batches (SkyRL's "sample at most this many batches before
stopping"; -1: no limit). Where SkyRL's trainer then ends the run, this loop stops sampling and
trains on what it has: ``filter``'s prompts kept so far, ``replace``'s last batch as SkyRL left
it; with no prompt of any signal among them the step is skipped, with its reason
(``SampledBatch.skipped``). A batch in which ``filter`` keeps no prompt (the start of a run on
hard data) counts toward the limit and adds nothing: SkyRL 0.4.0's ``handle_filter_sampling``
slices the batch to its kept rows and fails on none (``slice_generator_output``: "indices must be
non-empty"), so such a batch is not handed to it.

The decisions are SkyRL's own ``handle_dynamic_sampling`` (skyrl/train/utils/trainer_utils.py),
called on a ``GeneratorOutput`` made of the episodes' trajectories: one row per trajectory, its
prompt's task index as the uid, and the row's index in an extra column so the rows SkyRL keeps
map back to trajectories. ``replace`` draws with numpy's global generator, as SkyRL does; it is
seeded per step here (and restored afterwards) so that a resumed run repeats its choices.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from rllm_sweeps.training.episodes import GroupKey
from rllm_sweeps.training.settings import LoopSettings
from rllm_sweeps.workflows.episode import Episode, Trajectory

log = logging.getLogger(__name__)
ROW_KEY = "rllm_row"  # the extra GeneratorOutput column: a row's index in DynamicSampler._rows


@dataclass(frozen=True)
class SampledBatch:
    """What dynamic sampling leaves to train on, and what it took."""

    groups: dict[GroupKey, list[Trajectory]]  # what the step trains on
    rolled_out: list[Episode]  # every episode the step rolled out
    epoch: int  # the data epoch of the step's last prompt batch
    sample_batches: int  # prompt batches rolled out for this step
    kept_groups: int  # prompts kept (with ``replace``: those with a signal)
    dropped_groups: int  # prompts dropped or replaced for having no signal
    skipped: str | None = None  # why the step trains on nothing (no prompt with a signal in its batches)

    @classmethod
    def whole(cls, episodes: list[Episode], groups: dict[GroupKey, list[Trajectory]], epoch: int) -> SampledBatch:
        """One prompt batch, all of it kept (no dynamic sampling)."""
        return cls(groups, episodes, epoch, 1, len({key[0] for key in groups}), 0)


@dataclass
class DynamicSampler:
    """Feed it each rolled-out batch (:meth:`add`) until it says it has enough; then :meth:`result`."""

    settings: LoopSettings
    seed: tuple[int, ...]  # this step's seed for ``replace``'s draws
    _rows: list[tuple[Episode, Trajectory]] = field(default_factory=list)
    _state: dict | None = None
    _batches: int = 0
    _dropped: int = 0
    _final: tuple[list[int], list[str]] | None = None
    _skipped: str | None = None

    def add(self, episodes: Sequence[Episode]) -> bool:
        """Take a batch's episodes; True when another batch must be sampled."""
        from skyrl.train.utils.trainer_utils import handle_dynamic_sampling

        s = self.settings
        self._batches += 1
        first = len(self._rows)
        rows = [(e, t) for e in episodes if e.trainable for t in e.trajectories]
        self._rows += rows
        output = _generator_output(rows, first)
        uids = [str(e.task_index) for e, _ in rows]
        config = {
            "type": s.dynamic_sampling_type,
            "max_sample_batches": s.dynamic_sampling_max_sample_batches,
            "min_replace_ratio": s.dynamic_sampling_min_replace_ratio,
            "train_batch_size": s.train_batch_size,
            "n_samples_per_prompt": s.n,
        }
        if self._state is None:
            self._state = {"sample_batch_count": 1}
        else:
            self._state["sample_batch_count"] += 1
        no_signal = _no_signal(uids, output["rewards"], s.n)
        self._dropped += no_signal
        if s.dynamic_sampling_type == "filter" and no_signal == len(set(uids)):
            keep_sampling, state = True, self._state  # nothing to keep: SkyRL would fail slicing to no row
        else:
            with _numpy_seeded([*self.seed, self._batches]):
                kept, kept_uids, keep_sampling, state = handle_dynamic_sampling(output, uids, config, self._state)
        if not keep_sampling:
            self._final = (list(kept[ROW_KEY]), kept_uids)
            return False
        if state is not None:
            self._state = state  # filter's prompts kept so far
        limit = s.dynamic_sampling_max_sample_batches
        if limit > 0 and self._batches >= limit:
            self._final = self._at_limit(output, uids, limit)
            return False
        return True

    def _at_limit(self, last: dict, uids: list[str], limit: int) -> tuple[list[int], list[str]]:
        """The rows to train on when ``max_sample_batches`` batches did not give enough prompts with a
        signal: ``filter``'s kept so far, ``replace``'s last batch as SkyRL returned it (unchanged)."""
        s = self.settings
        if s.dynamic_sampling_type == "filter":
            collected = (self._state or {}).get("collected_generator_output")
            rows, kept_uids = (list(collected[ROW_KEY]), list(self._state["collected_uids"])) if collected else ([], [])
        else:
            rows, kept_uids = list(last[ROW_KEY]), uids
        rewards = [self._rows[row][1].reward for row in rows]
        with_signal = len(set(kept_uids)) - _no_signal(kept_uids, rewards, s.n)
        log.warning(
            "dynamic sampling (%s): %d of %d prompts with a reward signal after %d sample batches "
            "(trainer.algorithm.dynamic_sampling.max_sample_batches=%d): training on what there is",
            s.dynamic_sampling_type, with_signal, s.train_batch_size, self._batches, limit,
        )  # fmt: skip
        if with_signal == 0:
            self._skipped = (
                f"no prompt with a reward signal (responses of differing rewards) in {self._batches} sample "
                f"batches (trainer.algorithm.dynamic_sampling.max_sample_batches={limit}): the data is too hard "
                "or too easy for the model now; nothing to train on"
            )
            return [], []
        return rows, kept_uids

    def result(self, rolled_out: list[Episode], epoch: int) -> SampledBatch:
        """What to train on, once :meth:`add` said it has enough (``rolled_out``: every batch's
        episodes; ``epoch``: the last batch's)."""
        assert self._final is not None, "add() batches until it returns False"
        rows, uids = self._final
        groups: dict[GroupKey, list[Trajectory]] = {}
        for row, uid in zip(rows, uids, strict=True):
            _, traj = self._rows[row]
            # ``replace`` gives a bad prompt's rows a good prompt's trajectories and uid: they join
            # that prompt's group, as in SkyRL.
            groups.setdefault((int(uid), traj.role), []).append(traj)
        return SampledBatch(groups, rolled_out, epoch, self._batches, len(set(uids)), self._dropped, self._skipped)


def _no_signal(uids: Sequence[str], rewards: Sequence[float], n: int) -> int:
    """Prompts without a reward signal, by SkyRL's test in its dynamic sampling: the standard
    deviation of their responses' rewards is 0 and ``rollout.n`` > 1."""
    by_uid: dict[str, list[float]] = {}
    for uid, reward in zip(uids, rewards, strict=True):
        by_uid.setdefault(uid, []).append(reward)
    return sum(1 for values in by_uid.values() if n > 1 and np.std(values) == 0)


def _generator_output(rows: Sequence[tuple[Episode, Trajectory]], first: int) -> dict:
    """SkyRL's GeneratorOutput for these trajectories (only what its sampling reads and checks)."""
    responses = [[tok for step in t.steps for tok in step.response_ids] for _, t in rows]
    return {
        "prompt_token_ids": [list(t.steps[0].prompt_ids) if t.steps else [] for _, t in rows],
        "response_ids": responses,
        "rewards": [float(t.reward) for _, t in rows],
        "loss_masks": [[1] * len(r) for r in responses],
        "stop_reasons": [t.steps[-1].stop_reason if t.steps else "stop" for _, t in rows],
        "rollout_metrics": None,
        "rollout_logprobs": None,
        ROW_KEY: list(range(first, first + len(rows))),
    }


@contextlib.contextmanager
def _numpy_seeded(seed: Sequence[int]) -> Iterator[None]:
    state = np.random.get_state()
    np.random.seed(np.random.SeedSequence(list(seed)).generate_state(1)[0])
    try:
        yield
    finally:
        np.random.set_state(state)


__all__ = ["DynamicSampler", "SampledBatch"]
