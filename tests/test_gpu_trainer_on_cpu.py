"""SkyRL's GPU trainer (``SkyRLTrainBackend``) driven by the project's code as far as it runs on CPU.

The trainer's workers need CUDA and vLLM, which no machine here has (docs/JOBS.md says what has and
has not run). What does run here is SkyRL's real backend object: its constructor, its config
builder, and its ``sample`` call down to the HTTP client that would talk to the vLLM servers. These
tests put the project's own code (the rollout client, the job's overrides) in front of it.
"""

from __future__ import annotations

import asyncio

import pytest
from omegaconf import OmegaConf

from rllm_sweeps.config.load import load_config
from rllm_sweeps.config.native import quiet_skyrl
from rllm_sweeps.engines.skyrl_train import built_config, make_skyrl_train_backend

pytestmark = pytest.mark.slow  # builds SkyRL's GPU trainer config through SkyRL's own builders

GPU = ["skyrl.engine=fsdp", "resources.gpus_per_node=1", "resources.cpus_per_task=2", "model.lora.rank=8"]
MERGE_LORA_OFF = "skyrl.train.trainer.policy.megatron_config.lora_config.merge_lora=false"


def _backend_and_config(overrides: list[str], tmp_path, job_dir=None):
    from rllm_sweeps.cachedir import cache_dir
    from rllm_sweeps.models import resolve_model_path

    cfg = load_config([*GPU, *overrides], notify=lambda _: None)
    model_dir = resolve_model_path(str(cfg.model.path), cache_dir())
    tree = OmegaConf.to_container(cfg.skyrl.train, resolve=True)
    with quiet_skyrl():
        backend = make_skyrl_train_backend(str(cfg.skyrl.engine), tree, model_dir, job_dir or tmp_path / "job")
        built = built_config(backend, int(cfg.model.lora.rank), float(cfg.model.lora.alpha))
    return cfg, backend, built


class ScriptedVLLMClient:
    """Stands in for SkyRL's ``RemoteInferenceClient`` (the HTTP client of its vLLM servers) and
    nothing else: it answers each ``sample`` request with a fixed response, the end-of-turn token
    after a few letters. It proves the call pattern of the project's rollout path into SkyRL's real
    ``SkyRLTrainBackend.sample``, not vLLM."""

    def __init__(self, tokens: list[int]) -> None:
        self.tokens = tokens
        self.requests: list[dict] = []

    async def sample(self, payload: dict) -> dict:
        await asyncio.sleep(0)
        self.requests.append(payload["json"])
        return {"sequences": [{"tokens": self.tokens, "logprobs": [-0.5] * len(self.tokens), "stop_reason": "stop"}]}

    async def aclose(self) -> None:
        pass


def _ready_to_sample(backend, built, client: ScriptedVLLMClient) -> None:
    """The state ``create_model`` + ``save_sampler_checkpoint`` leave a colocated LoRA backend in
    (policy registered, engines up and awake, the adapter's signature pinned), without the
    workers and vLLM servers that need CUDA."""
    backend._cfg = built
    backend._model_ids_to_role = {"policy": "policy"}
    backend._base_lora_signature = (
        int(built.trainer.policy.model.lora.rank),
        int(built.trainer.policy.model.lora.alpha),
    )
    backend._inference_engine_client = client
    backend._inference_engines_initialized = True
    backend._engines_sleep_level = None


def test_rollout_path_samples_through_skyrl_train_backends_own_event_loop(tmp_path):
    """SkyRLTrainBackend.sample runs asyncio.run itself; the rollout client must call it off its loop."""
    from transformers import AutoTokenizer

    from rllm_sweeps.tasks import load_task
    from rllm_sweeps.workflows.chat import ChatFormat, stop_token_ids
    from rllm_sweeps.workflows.client import RolloutClient, Sampling, SeedPlan
    from rllm_sweeps.workflows.rollout import run_episodes
    from rllm_sweeps.workflows.single_turn import SingleTurnSettings, SingleTurnWorkflow

    cfg, backend, built = _backend_and_config([], tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(backend.base_model)
    stops = stop_token_ids(tokenizer)
    client_http = ScriptedVLLMClient(tokenizer.encode("aaa") + [stops[0]])
    _ready_to_sample(backend, built, client_http)
    task = load_task(cfg.task)
    examples, n = task.train[:2], 2
    client = RolloutClient(
        backend,
        "policy",
        ("step000000-1", tmp_path / "sampler.tar"),
        stops,
        Sampling(temperature=1.0, top_p=1.0, top_k=-1, max_tokens=8),
        SeedPlan(seed=0, stream=0, step=0, episodes=len(examples) * n),
    )
    episodes = run_episodes(
        SingleTurnWorkflow(task, SingleTurnSettings()),
        examples,
        n,
        client,
        ChatFormat(tokenizer, task.chat_template),
        first_task_index=0,
        max_prompt_length=int(cfg.data.max_prompt_length),
        max_response_length=8,
    )
    assert client.failure is None
    assert len(episodes) == 4 and client.sample_calls == 1
    assert len(client_http.requests) == 4
    assert {r["model"] for r in client_http.requests} == {"policy"}  # the adapter SkyRL registers on vLLM
    for e, example in zip(episodes, [x for x in examples for _ in range(n)], strict=True):
        (traj,) = e.trajectories
        assert traj.steps[0].response_ids == client_http.tokens
        assert traj.steps[0].logprobs == [-0.5] * len(client_http.tokens)
        assert traj.reward == task.reward_fn(example["prompt"], traj.steps[0].response_text, example["ground_truth"])


def _path_leaves(built) -> dict[str, str]:
    """Every absolute path SkyRL's built config holds, by key (the model's directory aside)."""
    from skyrl.train.config import get_config_as_yaml_str

    from rllm_sweeps.plain_tree import leaves

    tree = OmegaConf.to_container(OmegaConf.create(get_config_as_yaml_str(built)))
    model = str(built.trainer.policy.model.path)
    found = {}
    for key, value in leaves(tree):
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v.startswith(("/", "~")) and v != model:
                found[key] = v
    return found


def test_two_jobs_give_skyrl_no_path_in_common_and_each_its_own_job_directory(tmp_path):
    """LoRA sync, logs, exports, SkyRL's checkpoints: in each job's directory, never SkyRL's machine-wide
    defaults (two jobs on one node would read each other's adapter from /tmp/skyrl_lora_sync/policy)."""
    from rllm_sweeps.records.layout import JobPaths

    paths = {}
    for job in ("job-a", "job-b"):
        _, _, built = _backend_and_config([], tmp_path, job_dir=tmp_path / job)
        paths[job] = _path_leaves(built)
    a, b = paths["job-a"], paths["job-b"]
    for key in ("trainer.policy.model.lora.lora_sync_path", "trainer.log_path", "trainer.export_path"):
        assert a[key].startswith(str(JobPaths(tmp_path / "job-a").skyrl) + "/"), key
    # Data files are SkyRL's own generator's (the loop's data comes from task.*): not written by a job.
    written = {k for k in a if not k.startswith(("data.", "environment."))}
    assert written and not {a[k] for k in written} & {b[k] for k in written}


def test_skyrls_trainer_computes_logprobs_at_the_sampling_temperature_and_vllm_returns_them_processed(tmp_path):
    """The loop trains on the sampler's log-probabilities as the old policy's; SkyRL's trainer computes
    the new ones at trainer.algorithm.temperature: both must be at the sampling temperature."""
    overrides = ["rollout.train.temperature=0.7", "algorithm.eps_clip=0.3"]  # eps_clip: algorithm is overridden
    _, _, built = _backend_and_config(overrides, tmp_path)
    assert built.generator.sampling_params.temperature == 0.7
    assert built.trainer.algorithm.temperature == 0.7
    assert built.generator.inference_engine.engine_init_kwargs["logprobs_mode"] == "processed_logprobs"


class InProcessDispatch:
    """Stands in for SkyRL's ``WorkerDispatch`` (the Ray layer over the policy's workers) and nothing
    else: ``register_adapter`` runs the method every worker of the group would run, on one worker
    object of SkyRL's own class, in this process."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self.registered: list[tuple[str, str]] = []

    def register_adapter(self, role: str, model_id: str) -> None:
        self.worker.register_adapter(model_id)
        self.registered.append((role, model_id))


def test_the_kl_reference_adapter_is_created_through_skyrl_train_backends_multi_lora_path(tmp_path):
    """The project's Policy.create asks SkyRLTrainBackend.create_model for ``policy-ref`` with the
    policy's rank and alpha: SkyRL's multi-LoRA path (its signature check passes) registers it on the
    policy's workers. SkyRL 0.4.0's FSDP workers refuse (PolicyWorkerBase.register_adapter, which its
    FSDP worker does not override: multi-LoRA is Megatron-only), which is why validation refuses a KL
    term on skyrl.engine=fsdp (config/engine_names.py NO_REFERENCE) and accepts it on megatron."""
    import importlib.util
    from pathlib import Path

    from skyrl.backends.skyrl_train.workers.worker import PolicyWorkerBase

    from rllm_sweeps.training.policy import Policy
    from rllm_sweeps.training.settings import LoopSettings

    kl = ["algorithm.use_kl_loss=true", "algorithm.kl_beta=0.01", "skyrl.engine=megatron", MERGE_LORA_OFF]
    cfg, backend, built = _backend_and_config(kl, tmp_path)
    settings = LoopSettings.from_config(cfg)
    assert settings.needs_reference
    _ready_to_sample(backend, built, ScriptedVLLMClient([0]))  # the state after the policy's create_model

    class AdapterStoreWorker(PolicyWorkerBase):  # what Megatron's worker does: keep a slot per id
        def register_adapter(self, model_id: str) -> None:
            self.slots = [*getattr(self, "slots", []), model_id]

    accepting = InProcessDispatch(object.__new__(AdapterStoreWorker))
    backend._dispatch = accepting
    policy = Policy(backend, "policy", tmp_path)
    policy.create(settings)
    assert accepting.registered == [("policy", "policy-ref")]
    assert backend._model_ids_to_role["policy-ref"] == "policy"
    assert backend._model_metadata["policy-ref"].lora_config.rank == built.trainer.policy.model.lora.rank

    # FSDP: SkyRL's own worker method refuses the second adapter.
    del backend._model_ids_to_role["policy-ref"]
    backend._dispatch = InProcessDispatch(object.__new__(PolicyWorkerBase))
    with pytest.raises(NotImplementedError, match="only supported on the Megatron backend"):
        policy.create(settings)
    fsdp = importlib.util.find_spec("skyrl.backends.skyrl_train.workers.fsdp").submodule_search_locations[0]
    assert "def register_adapter" not in (Path(fsdp) / "fsdp_worker.py").read_text()
