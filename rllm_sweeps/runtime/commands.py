"""The argv of ``ray start`` for a head or a worker node (what :class:`RayNode` runs)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from rllm_sweeps.runtime.ports import RayPorts
from rllm_sweeps.runtime.spec import RayClusterSpec, check_temp_dir


def _ray_executable() -> list[str]:
    exe = Path(sys.executable).parent / "ray"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ray")
    if found:
        return [found]
    return [sys.executable, "-m", "ray.scripts.scripts"]


def _resource_args(spec: RayClusterSpec) -> list[str]:
    args = [f"--num-cpus={spec.num_cpus}", f"--num-gpus={spec.num_gpus}"]
    if spec.object_store_memory_mb is not None:
        args.append(f"--object-store-memory={spec.object_store_memory_mb * 1024 * 1024}")
    if spec.resources:
        args.append(f"--resources={json.dumps(dict(spec.resources))}")
    return args


def head_command(
    spec: RayClusterSpec,
    ports: RayPorts,
    temp_dir: Path,
    *,
    node_ip: str | None = None,
    block: bool = True,
) -> list[str]:
    """argv of ``ray start --head`` for ``spec`` on ``ports`` (``--block`` by
    default, so the process lives as long as the node)."""
    check_temp_dir(temp_dir)
    argv = [
        *_ray_executable(),
        "start",
        "--head",
        f"--node-ip-address={node_ip or spec.node_ip_address}",
        *ports.head_args(),
        *_resource_args(spec),
        f"--temp-dir={temp_dir}",
        f"--include-dashboard={'true' if spec.include_dashboard else 'false'}",
        "--disable-usage-stats",
    ]
    if spec.dashboard_host is not None:
        argv.append(f"--dashboard-host={spec.dashboard_host}")
    if block:
        argv.append("--block")
    return argv


def worker_command(
    address: str,
    spec: RayClusterSpec,
    ports: RayPorts,
    temp_dir: Path,
    *,
    node_ip: str | None = None,
    block: bool = True,
) -> list[str]:
    """argv of ``ray start --address=IP:P`` joining the head at ``address``
    (``ports.gcs``/client/dashboard are not used on a worker node)."""
    check_temp_dir(temp_dir)
    argv = [*_ray_executable(), "start", f"--address={address}"]
    if node_ip:
        argv.append(f"--node-ip-address={node_ip}")
    argv += [
        *ports.node_args(),
        *_resource_args(spec),
        f"--temp-dir={temp_dir}",
        "--disable-usage-stats",
    ]
    if block:
        argv.append("--block")
    return argv
