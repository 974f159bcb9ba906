"""rllm-sweeps: experiment orchestration and a sweeps DSL for LLM RL training."""

__version__ = "0.1.0"
