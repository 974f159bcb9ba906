"""One rollout client over the backend's ``sample``, shared by every role of every episode in flight.

Workflows are coroutines: ``await client.generate(prompt_ids)`` queues one request. When every
episode still running is waiting on the client (and a pass of the event loop queued nothing
more: an episode's parallel calls are all in), the queued requests go to ``backend.sample`` as
one batch (one call however many episodes and roles), and each episode resumes with its answer.
So N episodes of a two-solver workflow sample 2N sequences in one call, then their N judges in
the next.

``backend.sample`` runs on a worker thread (``asyncio.to_thread``), never on the event loop's: SkyRL's
GPU trainer (``SkyRLTrainBackend.sample``) runs its own ``asyncio.run`` over its HTTP client, which
Python refuses inside a running loop. The episodes wait meanwhile either way.

Sampler seeds are a pure function of (trainer.seed, stream, step, episode, call): call 0 of
episode e takes the e-th seed of the step's stream, as the loop did before workflows existed (the
single-turn workflow samples exactly the tokens it sampled then); later calls take theirs from a
stream per call index. Batch composition never changes a seed.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


class SampleFailed(RuntimeError):
    """The backend answered a request with an error: the phase stops (no episode's fault)."""


@dataclass(frozen=True)
class Sampling:
    """Sampling settings of one phase (training or validation)."""

    temperature: float
    top_p: float
    top_k: int
    max_tokens: int  # data.max_response_length
    stop: tuple[str, ...] | None = None  # SkyRL's stop strings, applied by the episode (stop_strings.py)


@dataclass(frozen=True)
class ModelOutput:
    tokens: list[int]
    logprobs: list[float]
    stop_reason: str  # "stop" (an end-of-turn token or a stop string) or "length"
    stop_string: str | None = None  # the stop string the response ends with (stop_strings.py)


@dataclass(frozen=True)
class SeedPlan:
    """Seeds of one phase: (trainer.seed, stream, step) and the number of episodes."""

    seed: int
    stream: int
    step: int
    episodes: int

    @functools.cache  # noqa: B019 - a handful of small frozen plans per step
    def _seeds(self, call: int) -> tuple[int, ...]:
        entropy = [self.seed, self.stream, self.step] + ([call] if call else [])
        state = np.random.SeedSequence(entropy).generate_state(max(self.episodes, 1))
        return tuple(int(x) & 0x7FFFFFFF for x in state[: self.episodes])

    def seed_for(self, episode: int, call: int) -> int:
        return self._seeds(call)[episode]


@dataclass
class _Request:
    episode: int
    call: int
    prompt_ids: list[int]
    max_tokens: int
    future: asyncio.Future


class RolloutClient:
    """Batches the model calls of concurrently running episodes into ``backend.sample`` calls.

    Args:
        backend: a SkyRL ``AbstractBackend``.
        model_id: the policy's id in the backend.
        checkpoint: (sampler checkpoint id, path) of the weights to sample with.
        stop_token_ids: end-of-turn token ids.
        sampling: this phase's sampling settings.
        seeds: this phase's seed plan.
    """

    def __init__(
        self,
        backend: Any,
        model_id: str,
        checkpoint: tuple[str, Path],
        stop_token_ids: Sequence[int],
        sampling: Sampling,
        seeds: SeedPlan,
    ) -> None:
        self.backend = backend
        self.model_id = model_id
        self.checkpoint = checkpoint
        self.stop_token_ids = list(stop_token_ids)
        self.sampling = sampling
        self.seeds = seeds
        self._pending: list[_Request] = []
        self._running = 0  # episodes not finished
        self._flusher: asyncio.Future | None = None
        self.failure: BaseException | None = None  # what backend.sample raised, if it did
        self.sample_calls = 0  # backend.sample calls made
        self.sample_time_s = 0.0  # seconds spent in them
        self.sequences = 0  # sequences sampled

    async def generate(
        self, episode: int, call: int, prompt_ids: list[int], max_tokens: int | None = None
    ) -> ModelOutput:
        """One response to ``prompt_ids`` (call ``call`` of episode ``episode``)."""
        future = asyncio.get_running_loop().create_future()
        limit = self.sampling.max_tokens if max_tokens is None else min(max_tokens, self.sampling.max_tokens)
        self._pending.append(_Request(episode, call, list(prompt_ids), max(limit, 1), future))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush_when_all_wait())
        return await future

    def run_all(self, episodes: Sequence[Awaitable[T]]) -> list[T]:
        """Run coroutines (one per episode) to completion with their model calls batched; results in order."""

        async def tracked(coro: Awaitable[T]) -> T:
            try:
                return await coro
            finally:
                self._running -= 1

        async def main() -> list[T]:
            self._running = len(episodes)
            return await asyncio.gather(*(tracked(c) for c in episodes))

        return asyncio.run(main())

    async def _flush_when_all_wait(self) -> None:
        """Sample once every running episode waits on the client and a pass of the event loop
        queued nothing new (an episode's parallel calls, e.g. its solvers, are all queued)."""
        idle = 0
        while True:
            queued = len(self._pending)
            await asyncio.sleep(0 if idle < 100 else 0.001)  # the episodes that can run, run
            idle += 1
            if len(self._pending) == queued and len({r.episode for r in self._pending}) >= self._running:
                break
        self._flusher = None
        batch, self._pending = self._pending, []
        try:
            outputs = await asyncio.to_thread(self._sample, batch)
        except Exception as err:  # every waiting episode learns of it; the phase stops (rollout.py)
            self.failure = err
            for r in batch:
                r.future.set_exception(err)
            return
        for r, out in zip(batch, outputs, strict=True):
            r.future.set_result(out)

    def _sample(self, batch: list[_Request]) -> list[ModelOutput]:
        from skyrl.tinker import types

        s = self.sampling
        ckpt_id, ckpt_path = self.checkpoint
        n = len(batch)
        prepared = types.PreparedSampleBatch(
            all_model_inputs=[types.ModelInput(chunks=[types.EncodedTextChunk(tokens=r.prompt_ids)]) for r in batch],
            all_sampling_params=[
                types.SamplingParams(
                    temperature=s.temperature,
                    top_p=s.top_p,
                    top_k=s.top_k,
                    max_tokens=r.max_tokens,
                    seed=self.seeds.seed_for(r.episode, r.call),
                    stop_tokens=self.stop_token_ids,
                )
                for r in batch
            ],
            all_model_ids=[self.model_id] * n,
            all_checkpoint_ids=[ckpt_id] * n,
            all_checkpoint_paths=[str(ckpt_path)] * n,
            all_session_ids=[None] * n,
            needs_prompt_logprobs=False,
            request_batch_slices=[
                (f"{r.episode}:{r.call}", self.model_id, i, i + 1, False, 0) for i, r in enumerate(batch)
            ],
        )
        start = time.perf_counter()
        results = self.backend.sample(prepared)
        self.sample_time_s += time.perf_counter() - start
        self.sample_calls += 1
        self.sequences += n
        outputs = []
        for r in batch:
            out = results[f"{r.episode}:{r.call}"]
            if isinstance(out, types.ErrorResponse):
                raise SampleFailed(f"backend.sample failed for episode {r.episode} call {r.call}: {out.error}")
            seq = out.sequences[0]
            outputs.append(ModelOutput(list(seq.tokens), [float(x) for x in seq.logprobs], str(seq.stop_reason)))
        return outputs


__all__ = ["ModelOutput", "RolloutClient", "SampleFailed", "Sampling", "SeedPlan"]
