"""Which GPUs of this machine a local job gets: a pure decision, and the pool that applies it.

A job asks for ``resources.gpus_per_node`` GPUs and may share each with others
(``resources.jobs_per_gpu=k``: it takes 1/k of each of its GPUs). A job starts only when that much
of as many GPUs is free, so ``parallel`` is an upper bound and the next job starts the moment a GPU
frees. Among the GPUs with room, the emptiest are taken first (ties: the lower index), so k jobs
share a GPU only when the others are fuller. The machine's GPUs come from gpus.py.

What a job is given travels in its environment: ``CUDA_VISIBLE_DEVICES`` (its GPUs; empty for a
job of none on a machine that has GPUs, with JAX on the CPU) and, when it shares, a memory cap its
engine honours (JAX: ``XLA_PYTHON_CLIENT_MEM_FRACTION``; JAX takes most of a GPU's memory at start
otherwise, and a second job on the GPU dies of out-of-memory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

# Of a GPU's memory, what the jobs sharing it split between them (the rest: CUDA's own context,
# and fragmentation): 2 jobs get 0.45 each, 4 jobs 0.22 (as measured by hand on one H200: issue 33).
SHARED_MEMORY = 0.9


@dataclass(frozen=True)
class GpuRequest:
    """What one job asks of the machine's GPUs."""

    gpus: int  # resources.gpus_per_node
    jobs_per_gpu: int  # resources.jobs_per_gpu: the job takes 1/jobs_per_gpu of each of its GPUs

    @property
    def share(self) -> Fraction:
        return Fraction(1, self.jobs_per_gpu)


def place(free: Mapping[str, Fraction], request: GpuRequest) -> tuple[str, ...] | None:
    """The GPUs (ids, in the machine's order) to give a job now, or None: not enough are free.
    ``free``: each GPU's free share (1 = no job on it), in the machine's order."""
    if request.gpus == 0:
        return ()
    order = list(free)
    fits = [gpu for gpu in order if free[gpu] >= request.share]
    if len(fits) < request.gpus:
        return None
    chosen = sorted(fits, key=lambda gpu: (-free[gpu], order.index(gpu)))[: request.gpus]
    return tuple(sorted(chosen, key=order.index))


# JAX's own share of a GPU it has to itself (XLA_PYTHON_CLIENT_MEM_FRACTION's default).
JAX_DEFAULT_MEMORY = 0.75


def memory_fraction(request: GpuRequest, env: Mapping[str, str]) -> float:
    """The share of each of its GPUs' memory a job's JAX may use: its cap when it shares (the
    launcher's), else what the environment the job inherits says, else JAX's default."""
    if request.jobs_per_gpu > 1:
        return int(SHARED_MEMORY / request.jobs_per_gpu * 100) / 100
    if env.get("XLA_PYTHON_CLIENT_MEM_FRACTION"):
        return float(env["XLA_PYTHON_CLIENT_MEM_FRACTION"])
    if env.get("XLA_PYTHON_CLIENT_PREALLOCATE", "").lower() in ("false", "0"):
        return 1.0  # grows as needed, up to the whole GPU
    return JAX_DEFAULT_MEMORY


def job_environment(gpus: tuple[str, ...], request: GpuRequest, machine_has_gpus: bool) -> dict[str, str]:
    """The variables that give a job exactly its GPUs (none on a machine without GPUs: nothing to hide)."""
    if not machine_has_gpus:
        return {}
    env = {"CUDA_VISIBLE_DEVICES": ",".join(gpus)}
    if not gpus:
        env["JAX_PLATFORMS"] = "cpu"  # asked for no GPU: the CPU, not an error about no visible GPU
    elif request.jobs_per_gpu > 1:
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{memory_fraction(request, {}):.2f}"
    return env


@dataclass
class GpuPool:
    """The machine's GPUs and who holds what share of each (one launcher's bookkeeping).

    Not thread safe: the sweeper's one loop calls it."""

    devices: Sequence[str]
    held: dict[object, tuple[tuple[str, ...], Fraction]] = field(default_factory=dict)

    def free(self) -> dict[str, Fraction]:
        free = {gpu: Fraction(1) for gpu in self.devices}
        for gpus, share in self.held.values():
            for gpu in gpus:
                free[gpu] -= share
        return free

    def take(self, holder: object, request: GpuRequest) -> tuple[str, ...] | None:
        """GPUs for ``holder`` now (recorded as held until :meth:`release`), or None: wait."""
        gpus = place(self.free(), request)
        if gpus is not None:
            self.held[holder] = (gpus, request.share)
        return gpus

    def release(self, holder: object) -> None:
        self.held.pop(holder, None)

    def problem(self, request: GpuRequest) -> str | None:
        """Why a job of this request could never start here, or None."""
        if request.gpus > len(self.devices):
            have = f"{len(self.devices)} GPU{'s' if len(self.devices) != 1 else ''}"
            return (
                f"resources.gpus_per_node={request.gpus} but this machine has {have} visible "
                f"({', '.join(self.devices) or 'none'}; CUDA_VISIBLE_DEVICES narrows them)"
            )
        return None


__all__ = [
    "JAX_DEFAULT_MEMORY",
    "SHARED_MEMORY",
    "GpuPool",
    "GpuRequest",
    "job_environment",
    "memory_fraction",
    "place",
]
