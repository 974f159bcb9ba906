"""This machine's GPUs as a local launcher may hand them out: the visible ones.

An existing ``CUDA_VISIBLE_DEVICES`` is honoured (its entries, indices or UUIDs, are what the
jobs get); otherwise NVIDIA's management library (NVML, through nvidia-ml-py) counts the devices.
No NVML (no driver: a CPU machine) means no GPUs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def visible_gpus(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The ids the launcher may put in a job's CUDA_VISIBLE_DEVICES, in order."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        # CUDA stops at the first invalid entry ("-1" hides every GPU): so do we.
        ids = []
        for entry in (e.strip() for e in visible.split(",")):
            if not entry or entry.startswith("-"):
                break
            ids.append(entry)
        return tuple(ids)
    return tuple(str(i) for i in range(_nvml_device_count()))


def gpu_memory_bytes(gpu: str) -> int | None:
    """The memory of one visible GPU (an index or a UUID, as CUDA_VISIBLE_DEVICES names it); None
    without NVML or a GPU of that id."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None  # no driver (a CPU machine)
    try:
        by_index = gpu.isdigit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(gpu)) if by_index else pynvml.nvmlDeviceGetHandleByUUID(gpu)
        return int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()


def _nvml_device_count() -> int:
    try:
        import pynvml
    except ImportError:
        return 0
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return 0  # no driver (a CPU machine)
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


__all__ = ["gpu_memory_bytes", "visible_gpus"]
