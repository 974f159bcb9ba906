"""The multi-turn workflow: a skyrl-gym environment between the model's turns.

Per episode: the environment is made from ``workflow.env`` (an id of skyrl-gym's registry,
``gsm8k``, ``gsm8k_multi_turn``, ..., or a ``BaseTextEnv`` subclass as ``module:Class``) with
``env_config=workflow.env_config`` and the example as ``extras`` (``reward_spec.ground_truth``,
``extra_info``, ``max_turns``: what SkyRL's generator passes); ``env.init`` gives the first prompt.
Then, as SkyRL's generator does: model turn, ``env.step(reply)`` -> observations, reward, done;
the observation tokens are appended to the conversation (token in, token out), until done or
``workflow.max_turns`` replies. The conversation is one trajectory (role ``policy``) whose reward
is the sum of the step rewards; only the model's own tokens are trained (observations are masked).

With a dataset by path (``data.train_files``) the environment is each row's ``env_class`` (or
``environment.env_class``) with ``environment.skyrl_gym.<env>`` as its config and the row's extras, as SkyRL's
generator makes it; ``workflow.env`` is not used then.

Termination: ``env_done``; ``max_turns``; ``max_prompt_length`` when the conversation outgrows
SkyRL's ``generator.max_input_length`` (default: ``data.max_prompt_length``) before the next turn.
SkyRL's other generator settings (stop strings, ``use_conversation_multi_turn``, the end-of-sequence
after a stop string, ``step_wise_trajectories``): workflows/generator.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rllm_sweeps.workflows.base import EpisodeContext, Workflow, WorkflowSettings
from rllm_sweeps.workflows.episode import Episode, Step, Termination, Trajectory


@dataclass
class MultiTurnSettings(WorkflowSettings):
    max_turns: int = 2
    env: str = "rllm_sweeps.tasks.guess:GuessLetterEnv"
    env_config: dict[str, Any] = field(default_factory=dict)

    def problems(self) -> list[tuple[str, str]]:
        out = super().problems()
        if not isinstance(self.env, str) or not self.env:
            out.append(("env", f"{self.env!r} is invalid: expected a skyrl-gym env id or 'module:EnvClass'"))
        elif ":" not in self.env:
            import skyrl_gym

            if self.env not in skyrl_gym.registry:
                ids = ", ".join(sorted(skyrl_gym.registry))
                out.append(
                    ("env", f"{self.env!r} is invalid: not in skyrl-gym's registry ({ids}); or 'module:EnvClass'")
                )
        else:
            from rllm_sweeps.tasks.base import import_object

            try:
                cls = import_object(self.env)
            except ValueError as err:
                out.append(("env", f"{self.env!r} is invalid: {err}"))
            else:
                from skyrl_gym.envs.base_text_env import BaseTextEnv

                if not (isinstance(cls, type) and issubclass(cls, BaseTextEnv)):
                    out.append(("env", f"{self.env!r} is invalid: not a skyrl_gym BaseTextEnv subclass"))
        if not isinstance(self.env_config, dict):
            out.append(("env_config", f"{self.env_config!r} is invalid: expected a mapping"))
        return out


def make_env(settings: MultiTurnSettings, example: dict) -> Any:
    """The episode's environment, made by skyrl-gym (a registry id, or an entry point)."""
    import skyrl_gym
    from omegaconf import OmegaConf
    from skyrl_gym.envs.registration import EnvSpec

    extras = {k: v for k, v in example.items() if k not in ("prompt", "ground_truth")}
    extras["reward_spec"] = {"method": "rule", "ground_truth": example["ground_truth"], **extras.get("reward_spec", {})}
    extras.setdefault("extra_info", {})
    extras["max_turns"] = settings.max_turns
    spec = EnvSpec(id=settings.env, entry_point=settings.env) if ":" in settings.env else settings.env
    return skyrl_gym.make(spec, env_config=OmegaConf.create(settings.env_config), extras=extras)


class MultiTurnWorkflow(Workflow):
    Settings = MultiTurnSettings
    roles = ("policy",)

    async def run(self, example: dict, ctx: EpisodeContext) -> Episode:
        settings: MultiTurnSettings = self.settings  # type: ignore[assignment]
        gen = ctx.generator
        assert gen is not None
        eos = ctx.chat.eos_id
        if self.task.environments is not None:  # a dataset by path: the row's env_class (data/environments.py)
            env = self.task.environments.make(example, settings.max_turns)
        else:
            env = make_env(settings, example)
        try:
            prompt = example["prompt"]  # text, or chat messages (a dataset by path)
            messages, _ = env.init([{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt))
            history = list(messages)  # the conversation as messages (step-wise prompts are templated from it)
            tokens, truncated = ctx.prompt_ids(messages)
            traj = Trajectory("policy", step_wise=gen.step_wise_trajectories)
            termination = Termination.MAX_TURNS
            for turn in range(settings.max_turns):
                out = await ctx.generate(tokens)
                text = ctx.chat.decode(out.tokens)
                result = env.step(text)
                done = bool(result["done"])
                last = done or turn + 1 == settings.max_turns
                observations = list(result["observations"] or [])
                response, logprobs = out.tokens, out.logprobs
                if not last:  # raw-text style continues the assistant message: its end-of-sequence goes
                    response, logprobs = gen.continued(response, logprobs, eos)
                # SkyRL's end-of-sequence after a stop string is not sampled: it goes with the (untrained)
                # observation tokens; after the last turn it would follow every trained token, changing nothing
                obs = [] if last else gen.added_eos(out.stop_string, response, eos)
                obs += [] if last else ctx.chat.observation_ids(observations, done)
                step = Step(tokens, response, logprobs, out.stop_reason, obs, text, float(result["reward"]))
                traj.steps.append(step)
                if done:
                    termination = Termination.ENV_DONE
                    break
                history += [{"role": "assistant", "content": text}, *observations]
                # step-wise: the next prompt is the template applied to the conversation so far (as SkyRL)
                tokens = ctx.chat.encode(ctx.chat.prompt_text(history)) if traj.step_wise else step.full_ids
                if len(tokens) > gen.max_input_length:  # SkyRL's max_input_length, before the next turn
                    termination = Termination.MAX_PROMPT_LENGTH
                    step.observation_ids = []  # no next turn reads them
                    break
            traj.reward = sum(s.reward for s in traj.steps)
        finally:
            env.close()
        episode = ctx.episode(traj, termination=termination)
        episode.prompt_truncated = truncated
        return episode


__all__ = ["MultiTurnSettings", "MultiTurnWorkflow", "make_env"]
