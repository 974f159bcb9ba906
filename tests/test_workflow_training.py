"""Episodes -> training data, as pure logic: grouping by (task, role), per-role estimators, groups of
any size, equal rewards, mini batches over trajectories, the loss mask, episode failures, batching.

The rollout-client tests drive it with a stand-in for ``backend.sample`` (it records the batches it
gets and answers with fixed tokens): they prove the client's batching and bookkeeping, not SkyRL's
sampling, which the learning tests (tests/test_workflow_learning.py) run for real.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest

from rllm_sweeps.advantages import compute_advantages, compute_group_advantages
from rllm_sweeps.training.datums import Datum, loss_agg_scales
from rllm_sweeps.training.episodes import (
    assign_advantages,
    group_trajectories,
    mini_batches,
    trajectory_sequences,
)
from rllm_sweeps.workflows.client import RolloutClient, Sampling, SeedPlan
from rllm_sweeps.workflows.episode import Episode, Step, Termination, Trajectory
from rllm_sweeps.workflows.solver_judge import picked


def traj(role: str, reward: float, n_resp: int = 2) -> Trajectory:
    return Trajectory(role, [Step([1, 2], [3] * n_resp, [-0.5] * n_resp)], reward)


def solver_judge_episode(task: int, rollout: int, solver_rewards: list[float], judge_reward: float) -> Episode:
    return Episode(task, rollout, [*(traj("solver", r) for r in solver_rewards), traj("judge", judge_reward)])


def test_trajectories_group_by_task_and_role_across_the_episodes_of_a_task():
    episodes = [
        solver_judge_episode(7, 0, [1, 0], 1),
        solver_judge_episode(7, 1, [0, 0], 0),
        solver_judge_episode(8, 0, [1, 1], 1),
        Episode(8, 1, [], Termination.ERROR),  # failed: recorded, not trained on
    ]
    groups = group_trajectories(episodes)
    assert list(groups) == [(7, "solver"), (7, "judge"), (8, "solver"), (8, "judge")]
    assert [len(g) for g in groups.values()] == [4, 2, 2, 1]
    assert [t.reward for t in groups[(7, "solver")]] == [1, 0, 0, 0]


def test_each_role_uses_its_own_estimator():
    groups = group_trajectories([solver_judge_episode(0, 0, [1, 0], 1), solver_judge_episode(0, 1, [0, 0], 0)])
    scored = assign_advantages(groups, "grpo", {"judge": "reinforce", "solver": None})
    solver = [s.advantage for s in scored if s.trajectory.role == "solver"]
    judge = [s.advantage for s in scored if s.trajectory.role == "judge"]
    assert judge == [1.0, 0.0]  # reinforce: the reward itself
    assert np.allclose(solver, compute_advantages([[1, 0, 0, 0]], "grpo")[0])


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "reinforce", "maxrl"])
def test_group_local_estimators_on_groups_of_different_sizes_match_each_group_alone(estimator):
    groups = [[1.0, 0.0, 0.5], [0.2, 0.9], [1.0]]
    got = compute_group_advantages(groups, estimator)
    for g, a in zip(groups, got, strict=True):
        assert np.allclose(a, compute_advantages([g], estimator)[0])


def test_batch_estimators_on_groups_of_different_sizes_use_the_whole_batch():
    groups = [[1.0, 0.0, 0.5], [0.2, 0.9]]
    centred = np.concatenate([np.array(g) - np.mean(g) for g in groups])
    expected = centred / np.sqrt(centred.std(ddof=1) ** 2 + 1e-8)
    assert np.allclose(np.concatenate(compute_group_advantages(groups, "reinforce_plus_plus_baseline")), expected)
    flat = np.concatenate(groups)
    whitened = (flat - flat.mean()) / np.sqrt(flat.var(ddof=1) + 1e-8)
    assert np.allclose(np.concatenate(compute_group_advantages(groups, "reinforce++")), whitened)


def test_groups_of_one_size_give_the_single_turn_loops_numbers():
    rewards = np.random.default_rng(0).random((4, 3))
    for estimator in ("grpo", "rloo", "reinforce_plus_plus_baseline", "reinforce++", "maxrl"):
        got = np.stack(compute_group_advantages(rewards.tolist(), estimator))
        assert np.allclose(got, compute_advantages(rewards, estimator)), estimator


@pytest.mark.parametrize("estimator", ["grpo", "rloo", "maxrl", "reinforce_plus_plus_baseline"])
def test_groups_whose_rewards_are_all_equal_get_zero_advantage_at_any_size(estimator):
    got = compute_group_advantages([[1.0, 1.0, 1.0], [0.0, 0.0], [0.3, 0.9]], estimator)
    assert np.all(got[0] == 0) and np.all(got[1] == 0) and np.any(got[2] != 0)


def test_mini_batches_split_trajectories_into_the_users_count_whatever_their_number():
    assert [len(b) for b in mini_batches(list(range(12)), 4)] == [3, 3, 3, 3]  # single-turn: whole groups
    assert [len(b) for b in mini_batches(list(range(7)), 2)] == [4, 3]
    assert [len(b) for b in mini_batches(list(range(2)), 4)] == [1, 1]  # never an empty mini batch
    assert sum(mini_batches(list(range(13)), 5), []) == list(range(13))


def test_observation_tokens_carry_no_loss_and_continuing_turns_form_one_sequence():
    prompt, r1, obs, r2 = [10, 11, 12], [20, 21], [30, 31, 32], [40]
    t = Trajectory("policy", [Step(prompt, r1, [-1.0, -2.0], observation_ids=obs), Step(prompt + r1 + obs, r2, [-3.0])])
    (seq,) = trajectory_sequences(t, advantage=0.5, group=3)
    assert seq.tokens == prompt + r1 + obs + r2
    assert seq.mask == [0, 0, 0, 1, 1, 0, 0, 0, 1]
    d = Datum.from_sequence(seq)
    assert d.inputs == seq.tokens[:-1] and d.targets == seq.tokens[1:]
    # target t is token t+1: weights on the two replies' tokens only, never on prompt or observation
    assert d.weights == [0, 0, 1, 1, 0, 0, 0, 1]
    assert d.logprobs == [0, 0, -1.0, -2.0, 0, 0, 0, -3.0]
    assert d.advantages == [0, 0, 0.5, 0.5, 0, 0, 0, 0.5]
    assert d.trained_tokens == 3 and d.group == 3


def test_a_step_with_a_fresh_prompt_starts_a_new_sequence_and_empty_replies_train_nothing():
    t = Trajectory("judge", [Step([1, 2], [3], [-1.0]), Step([9, 9], [4, 5], [-1.0, -1.0]), Step([7], [], [])])
    seqs = trajectory_sequences(t, advantage=-1.0, group=0)
    assert [s.tokens for s in seqs] == [[1, 2, 3], [9, 9, 4, 5]]


def test_prompt_mean_over_workflow_groups_matches_consecutive_groups():
    lengths = [3, 5, 2, 4]
    by_ids = loss_agg_scales(lengths, "prompt_mean", "token-sum", 8, groups=[0, 0, 1, 1])
    assert by_ids == loss_agg_scales(lengths, "prompt_mean", "token-sum", 8, group_size=2)
    scattered = loss_agg_scales(lengths, "prompt_mean", "token-sum", 8, groups=[0, 1, 0, 1])
    assert np.allclose(scattered, [1 / (2 * 5), 1 / (2 * 9), 1 / (2 * 5), 1 / (2 * 9)])


def test_the_judge_pick_is_the_first_number_in_range():
    assert picked("I pick 2", 2) == 1
    assert picked("7 then 1", 2) == 0
    assert picked("none", 2) is None


# ---- the rollout client: batching and episode bookkeeping (stand-in sampler, see the module docstring)


class RecordingSampler:
    """Answers every request with tokens [7, 8]; records the number of sequences per call."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.seeds: list[int] = []

    def sample(self, prepared):
        from skyrl.tinker import types

        self.batches.append(len(prepared.all_model_inputs))
        self.seeds += [p.seed for p in prepared.all_sampling_params]
        seq = types.GeneratedSequence(stop_reason="stop", tokens=[7, 8], logprobs=[-0.1, -0.2])
        return {
            rid: types.SampleOutput(sequences=[seq], prompt_logprobs=None) for rid, *_ in prepared.request_batch_slices
        }


def client_for(sampler: RecordingSampler, episodes: int) -> RolloutClient:
    return RolloutClient(sampler, "policy", ("c", "/x"), [2], Sampling(1.0, 1.0, -1, 4), SeedPlan(42, 1, 0, episodes))


def test_the_calls_of_all_episodes_in_flight_go_to_the_backend_together():
    from rllm_sweeps.workflows.base import EpisodeContext
    from rllm_sweeps.workflows.chat import ChatFormat

    sampler = RecordingSampler()
    client = client_for(sampler, 6)
    chat = ChatFormat(SimpleNamespace(decode=lambda ids, **_: "", chat_template=None), chat_template=False)

    async def solver_judge(ctx: EpisodeContext) -> int:
        await asyncio.gather(ctx.generate([1]), ctx.generate([1]))  # two solvers
        await ctx.generate([1, 2])  # the judge
        return ctx.episode_index

    contexts = [EpisodeContext(client, chat, i, i // 2, i % 2, 32, 4) for i in range(6)]
    assert client.run_all([solver_judge(c) for c in contexts]) == list(range(6))
    assert sampler.batches == [12, 6]  # 6 episodes x 2 solvers in one call, then their 6 judges
    # seeds depend on (episode, call) only, never on how the calls were batched
    plan = SeedPlan(42, 1, 0, 6)
    assert sampler.seeds[:2] == [plan.seed_for(0, 0), plan.seed_for(0, 1)]
    assert sampler.seeds[12] == plan.seed_for(0, 2)


def test_a_failing_episode_is_recorded_with_its_reason_and_the_others_train():
    from rllm_sweeps.tasks.base import Task
    from rllm_sweeps.workflows.chat import ChatFormat
    from rllm_sweeps.workflows.rollout import run_episodes
    from rllm_sweeps.workflows.single_turn import SingleTurnSettings, SingleTurnWorkflow

    def reward(prompt, response, truth):
        if truth == "bad":
            raise RuntimeError("environment timed out")
        return 1.0

    rows = [{"prompt": "p", "ground_truth": "ok"}, {"prompt": "q", "ground_truth": "bad"}]
    task = Task("t", rows, rows, reward, chat_template=False)
    tok = SimpleNamespace(decode=lambda ids, **_: "x", chat_template=None, __call__=None)
    chat = ChatFormat(tok, chat_template=False)
    chat.encode = lambda text: [1, 2]  # no tokenizer needed for this bookkeeping
    workflow = SingleTurnWorkflow(task, SingleTurnSettings())
    run = dict(first_task_index=0, max_prompt_length=8, max_response_length=4)
    episodes = run_episodes(workflow, rows, 2, client_for(RecordingSampler(), 4), chat, **run)
    assert [e.termination for e in episodes] == [Termination.ENV_DONE] * 2 + [Termination.ERROR] * 2
    assert episodes[2].error == "RuntimeError: environment timed out" and not episodes[2].trainable
    assert list(group_trajectories(episodes)) == [(0, "policy")]
    with pytest.raises(RuntimeError, match="timed out"):  # every episode failed: a bug, said as such
        run_episodes(workflow, rows[1:], 2, client_for(RecordingSampler(), 2), chat, **run)


def test_observation_tokens_in_the_chat_template_continue_the_conversation_token_for_token():
    """SkyRL's fixed-base observation tokens: prompt + reply + observation decode to the template's
    own rendering of the whole conversation (the tiny model's tokenizer and chat template)."""
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.workflows.chat import ChatFormat

    tok = AutoTokenizer.from_pretrained(str(resolve_model_path("builtin:tiny-qwen3", cache_dir())))
    chat = ChatFormat(tok, chat_template=True)
    user, reply, obs = "how many apples", "three", [{"role": "user", "content": "are you sure"}]
    ids = chat.prompt_ids(user) + chat.encode(reply) + [tok.eos_token_id] + chat.observation_ids(obs, done=False)
    conversation = [{"role": "user", "content": user}, {"role": "assistant", "content": reply}, *obs]
    expected = tok.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    assert tok.decode(ids) == expected
    raw = ChatFormat(tok, chat_template=False)
    assert raw.observation_ids(obs, done=False) == raw.encode("are you sure")  # raw text: encoded as is


# ---- the multi-turn workflow's bookkeeping, with the toy environment and a scripted sampler


@pytest.fixture(scope="module")
def tiny_chat():
    from transformers import AutoTokenizer

    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path
    from rllm_sweeps.workflows.chat import ChatFormat

    tok = AutoTokenizer.from_pretrained(str(resolve_model_path("builtin:tiny-qwen3", cache_dir())))
    return ChatFormat(tok, chat_template=False)


class ScriptedSampler:
    """Replies with the given texts in turn (one per call of an episode), as tokens."""

    def __init__(self, chat, replies: list[str]) -> None:
        self.replies = [chat.encode(r) for r in replies]
        self.calls: dict[str, int] = {}

    def sample(self, prepared):
        from skyrl.tinker import types

        out = {}
        for rid, *_ in prepared.request_batch_slices:
            call = int(rid.split(":")[1])
            tokens = self.replies[min(call, len(self.replies) - 1)]
            seq = types.GeneratedSequence(stop_reason="stop", tokens=tokens, logprobs=[-0.5] * len(tokens))
            out[rid] = types.SampleOutput(sequences=[seq], prompt_logprobs=None)
        return out


def guess_episodes(chat, replies: list[str], max_turns: int = 2, max_prompt_length: int = 32, env: str | None = None):
    from rllm_sweeps.tasks.base import Task
    from rllm_sweeps.tasks.toy import letters_reward
    from rllm_sweeps.workflows.multi_turn import MultiTurnSettings, MultiTurnWorkflow
    from rllm_sweeps.workflows.rollout import run_episodes

    rows = [{"prompt": "the a guess", "ground_truth": "c"}]
    task = Task("guess", rows, rows, letters_reward, chat_template=False)
    settings = MultiTurnSettings(max_turns=max_turns, **({"env": env} if env else {}))
    client = RolloutClient(
        ScriptedSampler(chat, replies), "p", ("c", "/x"), [2], Sampling(1, 1, -1, 8), SeedPlan(0, 1, 0, 2)
    )
    run = dict(first_task_index=0, max_prompt_length=max_prompt_length, max_response_length=8)
    return run_episodes(MultiTurnWorkflow(task, settings), rows, 2, client, chat, **run)


def test_a_wrong_guess_gets_the_environments_answer_appended_and_a_second_turn(tiny_chat):
    episode = guess_episodes(tiny_chat, ["b", "c c"])[0]
    (traj,) = episode.trajectories
    first, second = traj.steps
    assert first.observation_ids == tiny_chat.encode(" letter c") and first.reward == 0.0
    assert second.prompt_ids == first.full_ids and second.observation_ids == []  # the last turn keeps none
    assert traj.reward == 1.0 and episode.termination == Termination.ENV_DONE and episode.turns == 2
    (seq,) = trajectory_sequences(traj, 1.0, 0)  # one sequence; the observation carries no loss
    n_prompt, n_obs = len(first.prompt_ids), len(first.observation_ids)
    assert seq.mask == [0] * n_prompt + [1] * len(first.response_ids) + [0] * n_obs + [1] * len(second.response_ids)


def test_a_right_first_guess_ends_the_episode_and_max_turns_bounds_the_others(tiny_chat):
    assert guess_episodes(tiny_chat, ["c"])[0].turns == 1
    one_turn = guess_episodes(tiny_chat, ["b", "c"], max_turns=1)[0]
    assert one_turn.turns == 1 and one_turn.trajectories[0].reward == 0.0


def test_a_conversation_that_outgrows_the_prompt_limit_ends_with_that_reason(tiny_chat):
    prompt_len = len(tiny_chat.prompt_ids("the a guess"))
    episode = guess_episodes(tiny_chat, ["b", "c"], max_prompt_length=prompt_len + 2)[0]
    assert episode.termination == Termination.MAX_PROMPT_LENGTH and episode.turns == 1


def test_an_environment_that_raises_in_every_episode_fails_the_phase_with_its_error(tiny_chat):
    with pytest.raises(KeyError):  # every episode failed: the phase raises the environment's error
        guess_episodes(tiny_chat, ["b"], env="tests.test_workflow_training:BrokenEnv")


class BrokenEnv:
    """An environment whose constructor raises (a missing field of the example)."""

    def __init__(self, env_config=None, extras=None):
        raise KeyError("reward_spec")
