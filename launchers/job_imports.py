"""What a training job imports before its first step: imported once by the local launcher's
fork server (launchers/warm_start.py) so that the jobs forked from it start with them done.
Importing it has no other effect than quieting absl's import-time warning; a module of an
optional extra that is not installed is left out."""

import importlib
import logging

# absl (through SkyRL's checkpoint code) warns at import that TensorFlow is missing; the fork
# server's output is the sweeper's terminal, and a job's own log says nothing of it either.
logging.getLogger("absl").setLevel(logging.ERROR)

MODULES = (
    "hydra.main",  # train.py's own imports: multiprocessing runs the sweeper's script again in a job
    "rllm_sweeps.app",
    "rllm_sweeps.config.native",
    "skyrl.backends.jax",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.qwen2.tokenization_qwen2_fast",
    "rllm_sweeps.config.load",
    "skyrl.train.config",  # the config checks (pre-flight validation)
    "skyrl_gym.envs",
    "rllm_sweeps.job",
    "rllm_sweeps.training.loop",
    "rllm_sweeps.training.jax_backend",
    "rllm_sweeps.trackers",
    "rllm_sweeps.tasks",
    "rllm_sweeps.models",
)

for _name in MODULES:
    try:
        importlib.import_module(_name)
    except ImportError:
        pass
