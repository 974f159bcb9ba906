"""The RL loop, written against SkyRL's ``AbstractBackend`` (each engine of rllm_sweeps/engines/ builds one).

A step: the workflows' episodes (single-turn, multi-turn with an environment, several roles sharing
one policy: rllm_sweeps/workflows/) -> trajectories grouped by (task, role) -> advantages
(rllm_sweeps/advantages.py) -> SkyRL's trainer settings the loop implements (dynamic sampling,
overlong filtering, KL, reward shaping) -> policy loss, custom where the engine lacks it -> backend
calls -> metrics; periodic validation and checkpoints. Its settings are ``LoopSettings``
(settings.py); the job (rllm_sweeps/job/) runs it.
"""
