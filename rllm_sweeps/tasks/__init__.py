"""Tasks: a dataset (train/val lists of {"prompt", "ground_truth"}) + a reward function."""

from rllm_sweeps.tasks.base import Example, RewardFn, Task, import_object, load_task

__all__ = ["Example", "RewardFn", "Task", "import_object", "load_task"]
