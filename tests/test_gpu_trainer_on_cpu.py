"""SkyRL's GPU trainer (``SkyRLTrainBackend``) driven by the project's code as far as it runs on CPU.

The trainer's workers need CUDA and vLLM, which no machine here has (docs/JOBS.md says what has and
has not run). What does run here is SkyRL's real backend object: its constructor, its config
builder, its ``sample`` call down to the HTTP client that would talk to the vLLM servers, and its
``forward`` down to its reference worker's model call. These tests put the project's own code (the
rollout client, the job's overrides, the KL's reference) in front of it.
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


def _policy_created(backend, built) -> None:
    """The state ``create_model`` of a LoRA policy leaves the backend in (the loop's setup creates the policy,
    then its reference, then starts vLLM with the first ``save_sampler_checkpoint``), without the workers."""
    backend._cfg = built
    backend._model_ids_to_role = {"policy": "policy"}
    backend._base_lora_signature = (
        int(built.trainer.policy.model.lora.rank),
        int(built.trainer.policy.model.lora.alpha),
    )


def _ready_to_sample(backend, built, client: ScriptedVLLMClient) -> None:
    """The state ``create_model`` + ``save_sampler_checkpoint`` leave a colocated LoRA backend in
    (policy registered, engines up and awake, the adapter's signature pinned), without the
    workers and vLLM servers that need CUDA."""
    _policy_created(backend, built)
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
    FSDP worker does not override: multi-LoRA is Megatron-only), which is why fsdp's reference is SkyRL's
    own reference worker group instead (engines/skyrl_reference.py; the test below)."""
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


# ---- fsdp's KL reference: SkyRL's own FSDP reference worker group (engines/skyrl_reference.py) ----


class InProcessActor:
    """Stands in for one Ray actor of a ``PPORayActorGroup`` and nothing else: ``handle.method.remote(...)``
    runs the method on a worker object in this process (ObjectRef arguments fetched, as Ray does) and puts
    the result in Ray's object store, from which SkyRL's dispatch ``ray.get``s it."""

    def __init__(self, worker) -> None:
        self.worker = worker

    def __getattr__(self, name: str):
        import ray

        method = getattr(self.worker, name)

        def remote(*args, **kwargs):
            fetch = lambda v: ray.get(v) if isinstance(v, ray.ObjectRef) else v  # noqa: E731
            return ray.put(method(*map(fetch, args), **{k: fetch(v) for k, v in kwargs.items()}))

        return type("Method", (), {"remote": staticmethod(remote)})


def in_process_group(cfg, worker):
    """SkyRL's own ``PPORayActorGroup`` over one in-process worker (data parallel size 1): every method of the
    group (dispatch, offload, backload, init) is SkyRL's; only the actor's process and its torch.distributed
    device mesh, which need CUDA, are not there."""
    from skyrl.backends.skyrl_train.distributed.dispatch import ActorInfo, MeshRank
    from skyrl.backends.skyrl_train.workers.worker import PPORayActorGroup

    group = object.__new__(PPORayActorGroup)
    group.cfg, group.colocate_all, group.sequence_parallel_size, group.record_memory = cfg, True, 1, False
    group._num_nodes, group._num_gpus_per_node, group._last_dp_size = 1, 1, 1
    group._actor_handlers = [InProcessActor(worker)]
    rank = MeshRank(dp=0, sp=0, tp=0, pp=0, world_size=1, dp_size=1, pp_size=1)
    group.actor_infos = [ActorInfo(group._actor_handlers[0], rank)]
    return group


def cpu_reference_worker_class():
    """SkyRL's reference worker (``RefWorkerBase``: its ``forward``, micro-batching and per-sample outputs)
    with the project's ``HoldsNoAdapter``, as ``reference_worker_class()`` composes them over SkyRL's FSDP
    worker, whose FSDP strategy and flash-attn model wrapper need CUDA. On CPU: the model is the Hugging Face
    model itself, its forward is SkyRL's model wrapper's computation of the action log-probabilities
    (model_wrapper.py: position ids from the attention mask, log-softmax of the next token, the last
    ``response_length``), and residency on the GPU is a flag."""
    import torch
    from skyrl.backends.skyrl_train.training_batch import TrainingOutputBatch
    from skyrl.backends.skyrl_train.workers.worker import RefWorkerBase
    from transformers import AutoModelForCausalLM

    from rllm_sweeps.engines.skyrl_reference import HoldsNoAdapter

    class CPUReferenceWorker(HoldsNoAdapter, RefWorkerBase):
        def init_model(self, model_path):
            self.model_path, self.on_gpu = model_path, True
            self.model = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=torch.float32).eval()

        def offload_to_cpu(self, offload_optimizer=True, offload_model=True):
            self.on_gpu = False

        def backload_to_gpu(self, backload_optimizer=True, backload_model=True):
            self.on_gpu = True

        def _forward_micro_batch(self, micro_batch):
            assert self.on_gpu, "SkyRL's dispatch backloads the reference before its forward"
            sequences, mask = micro_batch["sequences"], micro_batch["attention_mask"]
            n = micro_batch.metadata["response_length"]
            position_ids = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 1)
            with torch.no_grad():
                logits = self.model(sequences, attention_mask=mask, position_ids=position_ids).logits
            log_probs = torch.log_softmax(logits.float(), -1).gather(-1, sequences.roll(-1, 1).unsqueeze(-1))
            output = TrainingOutputBatch({"output": log_probs.squeeze(-1)[:, -n - 1 : -1]})
            output.metadata = micro_batch.metadata
            return output

    return CPUReferenceWorker


class ResidencyWorker:
    """The policy's worker as far as the reference's calls reach it: SkyRL's dispatch offloads it."""

    def offload_to_cpu(self, offload_optimizer=True, offload_model=True):
        self.on_gpu = False

    def backload_to_gpu(self, backload_optimizer=True, backload_model=True):
        self.on_gpu = True


@pytest.fixture
def local_ray():
    import ray

    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def test_fsdp_reference_log_probs_come_from_skyrls_reference_worker_through_skyrl_train_backends_forward(
    tmp_path, local_ray
):
    """The loop's Policy.create asks the fsdp backend (SkyRLTrainBackendWithReference) for ``policy-ref`` as
    model_role="ref": the reference worker group is registered on SkyRL's own WorkerDispatch as "ref",
    initialised from trainer.ref.model.path (the base model) and offloaded (colocate_all). The loop's
    reference_logprobs then go through SkyRL's own SkyRLTrainBackend.forward (batch, padding, slicing),
    WorkerDispatch.forward("ref") (backload, ensure_active_adapter -> HoldsNoAdapter), SkyRL's mesh dispatch
    and RefWorkerBase.forward, and equal the base model's log-probability of each datum's targets.

    Replaced, as in-process stand-ins: the Ray actor processes (the group is SkyRL's PPORayActorGroup) and the
    FSDP/flash-attn model call (SkyRL's model wrapper's computation on CPU). tests/test_gpu_trainer.py runs
    the whole of it on a GPU where vLLM and flash-attn are installed."""
    import torch
    from skyrl.backends.skyrl_train.workers.worker_dispatch import WorkerDispatch
    from transformers import AutoModelForCausalLM

    from rllm_sweeps.engines.skyrl_reference import SkyRLTrainBackendWithReference
    from rllm_sweeps.engines.skyrl_train import SkyRLTrainEngine
    from rllm_sweeps.training.datums import Datum
    from rllm_sweeps.training.policy import Policy
    from rllm_sweeps.training.settings import LoopSettings

    cfg, backend, built = _backend_and_config(["algorithm.use_kl_loss=true", "algorithm.kl_beta=0.01"], tmp_path)
    assert isinstance(backend, SkyRLTrainBackendWithReference)
    assert built.trainer.ref.model.path == built.trainer.policy.model.path == backend.base_model
    settings = LoopSettings.from_config(cfg)
    _policy_created(backend, built)
    policy_worker = ResidencyWorker()
    backend._dispatch = WorkerDispatch(built, policy_actor_group=in_process_group(built.trainer, policy_worker))
    backend._dispatch.mark_as_offloaded("policy")  # as _build_policy leaves it, colocated
    # Without SkyRL's actor __init__ (it sets torch.distributed's environment and reroutes logging: the
    # actor process's business); forward reads its trainer config.
    reference = object.__new__(cpu_reference_worker_class())
    reference.cfg = built.trainer
    backend._reference_actor_group = lambda: in_process_group(built.trainer, reference)

    policy = Policy(backend, "policy", tmp_path, reference_worker=SkyRLTrainEngine("fsdp").traits.reference_worker)
    policy.create(settings)
    assert backend._model_ids_to_role["policy-ref"] == "ref"
    assert reference.model_path == backend.base_model and reference.on_gpu is False  # loaded, then offloaded
    assert backend._dispatch._gpu_state["ref"].model_on_gpu is False

    tokens = [[5, 9, 17, 3, 44, 8], [7, 7, 2], [11, 30, 12, 90, 1, 4, 6, 22, 19]]  # ragged: SkyRL pads
    datums = [
        Datum(t[:-1], t[1:], [1.0] * (len(t) - 1), [0.0] * (len(t) - 1), [0.0] * (len(t) - 1), len(t) - 1, 0)
        for t in tokens
    ]
    backend._dispatch._ensure_on_gpu("policy", need_optimizer=False)  # as the policy's last forward left it
    assert policy_worker.on_gpu
    got = policy.reference_logprobs(datums)
    base = AutoModelForCausalLM.from_pretrained(backend.base_model, torch_dtype=torch.float32).eval()
    for d, lp in zip(datums, got, strict=True):
        with torch.no_grad():
            logits = base(torch.tensor([d.inputs])).logits[0]
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(d.targets).unsqueeze(-1)).squeeze(-1)
        assert lp == pytest.approx(expected.tolist(), abs=1e-5)
    assert reference.on_gpu and not policy_worker.on_gpu  # colocated: SkyRL's dispatch holds one at a time
