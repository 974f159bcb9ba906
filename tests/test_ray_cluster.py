"""Per-job Ray clusters, against real Ray (no mocks).

Each test starts real `ray start --block` processes; the whole file takes
roughly 40-60 s on a 2-core machine.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from rllm_sweeps.runtime.ray_cluster import (  # noqa: E402
    MAX_TEMP_DIR_LEN,
    LocalRayCluster,
    RayClusterError,
    RayClusterSpec,
    RayPorts,
    cluster_processes,
    pid_alive,
    slurm_node_resources,
    wait_for_nodes,
)

REPO = Path(__file__).resolve().parents[1]
SMALL = 100  # MB of object store: small and fast on CI machines

# What SkyRL's initialize_ray does: ray.init() with no address, a runtime_env,
# log_to_driver=True.  It must land on the cluster named by RAY_ADDRESS.
CHILD = textwrap.dedent(
    """
    import json, os, ray
    ray.init(runtime_env={"env_vars": {"RLLM_PROBE": "ok"}}, log_to_driver=True)

    @ray.remote
    def probe():
        return os.environ.get("RLLM_PROBE")

    print("RESULT " + json.dumps({
        "gcs": ray.get_runtime_context().gcs_address,
        "cpus": ray.cluster_resources().get("CPU"),
        "nodes": len([n for n in ray.nodes() if n["Alive"]]),
        "probe": ray.get(probe.remote(), timeout=60),
    }))
    """
)


def _child_ray_init(env: dict[str, str]) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, r.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


def _assert_all_gone(recorded: dict[int, int], session_id: int) -> None:
    alive = [p for p, s in recorded.items() if pid_alive(p, s)]
    assert alive == [], f"cluster processes survived: {alive}"
    assert cluster_processes(session_id) == {}


# ---------------------------------------------------------------- cheap ones


def test_spec_rejects_long_temp_dir() -> None:
    long_dir = Path("/tmp") / ("x" * MAX_TEMP_DIR_LEN)
    with pytest.raises(ValueError, match="107-byte"):
        RayClusterSpec(num_cpus=1, temp_dir=long_dir)


def test_slurm_node_resources() -> None:
    env = {"SLURM_CPUS_ON_NODE": "16", "SLURM_GPUS_ON_NODE": "4"}
    assert slurm_node_resources(env) == (16, 4)
    env = {"SLURM_CPUS_ON_NODE": "8", "SLURM_GPUS_PER_NODE": "a100:2"}
    assert slurm_node_resources(env) == (8, 2)
    assert slurm_node_resources({"SLURM_GPUS_PER_NODE": "gpu:h100:4"})[1] == 4
    assert slurm_node_resources({})[1] == 0


def test_port_block_layout_is_disjoint() -> None:
    a, b = RayPorts.from_base(20000, 256), RayPorts.from_base(20256, 256)
    ports = a.all_ports()
    assert len(set(ports)) == len(ports) and min(ports) == 20000 and max(ports) == 20255
    assert a.max_worker - a.min_worker + 1 >= 200  # room for many actors
    assert not set(ports) & set(b.all_ports())


# ------------------------------------------------------------- real clusters


@pytest.mark.slow
def test_local_cluster_exports_address_and_stops_everything(monkeypatch) -> None:
    """(a) RAY_ADDRESS points at the cluster and a bare ray.init() in a child
    sees num_cpus as given; (c) after exit none of its processes remain."""
    decoy = "127.0.0.1:1"  # another cluster's address must never be used
    monkeypatch.setenv("RAY_ADDRESS", decoy)
    spec = RayClusterSpec(num_cpus=3, object_store_memory_mb=SMALL)  # 3 > cores: from spec
    with LocalRayCluster(spec) as c:
        assert os.environ["RAY_ADDRESS"] == c.address
        assert c.address.endswith(f":{c.ports.gcs}")
        got = _child_ray_init(dict(os.environ))
        assert got == {"gcs": c.address, "cpus": 3.0, "nodes": 1, "probe": "ok"}
        live = c.pids()
        assert c.session_id in live and len(live) >= 4  # ray start, gcs, raylet, ...
        # a start that cannot work fails fast, names its log, and leaves c alone
        clash = RayClusterSpec(num_cpus=1, object_store_memory_mb=SMALL, port=c.ports.gcs)
        with pytest.raises(RayClusterError, match=r"ray-start\.log") as err:
            LocalRayCluster(clash).start()
        shutil.rmtree(str(err.value).split("log: ")[1].split()[0].rsplit("/", 1)[0])
        assert os.environ["RAY_ADDRESS"] == c.address
        assert len(wait_for_nodes(c.address, 1, timeout=10)) == 1
        temp_dir, sid = c.temp_dir, c.session_id
    recorded = c.recorded_pids
    assert os.environ["RAY_ADDRESS"] == decoy  # restored
    _assert_all_gone(recorded, sid)
    assert not temp_dir.exists()


@pytest.mark.slow
def test_two_clusters_at_once_get_distinct_addresses() -> None:
    """(b) two jobs on one machine, started concurrently, don't collide."""
    results: dict[int, dict] = {}
    errors: list[BaseException] = []

    def job(cpus: int) -> None:
        try:
            spec = RayClusterSpec(num_cpus=cpus, object_store_memory_mb=SMALL)
            # threads share os.environ: pass the address explicitly instead
            with LocalRayCluster(spec, export_env=False) as c:
                got = _child_ray_init(c.env())
                results[cpus] = {
                    "address": c.address,
                    "ports": set(c.ports.all_ports()),
                    "got": got,
                    "recorded": c.recorded_pids,
                    "sid": c.session_id,
                }
                # hold the cluster until both are up, so they overlap in time
                deadline = time.monotonic() + 60
                while len(results) < 2 and time.monotonic() < deadline and not errors:
                    time.sleep(0.1)
            results[cpus]["recorded"] = c.recorded_pids
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=job, args=(n,)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert not errors, errors
    a, b = results[1], results[2]
    assert a["address"] != b["address"]
    assert not a["ports"] & b["ports"]
    for cpus, r in results.items():
        assert r["got"]["gcs"] == r["address"]
        assert r["got"]["cpus"] == float(cpus)
        assert r["got"]["probe"] == "ok"
        _assert_all_gone(r["recorded"], r["sid"])


HOLDER = textwrap.dedent(
    """
    import json, sys, time
    from rllm_sweeps.runtime.ray_cluster import LocalRayCluster, RayClusterSpec, sigterm_raises
    with sigterm_raises():
        with LocalRayCluster(RayClusterSpec(num_cpus=1, object_store_memory_mb=100)) as c:
            print(json.dumps({"sid": c.session_id, "pids": c.recorded_pids,
                              "temp_dir": str(c.temp_dir), "lock": str(c.node._lease.lock_path)}),
                  flush=True)
            time.sleep(600)
    """
)


def _start_holder() -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_holder(p: subprocess.Popen) -> dict:
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line, p.stderr.read() if p.stderr else ""
    info = json.loads(line)
    info["pids"] = {int(k): v for k, v in info["pids"].items()}
    return info


def _wait_session_gone(sid: int, timeout: float) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = cluster_processes(sid)
        if not left:
            return {}
        time.sleep(0.1)
    return cluster_processes(sid)


@pytest.mark.slow
def test_sigterm_and_sigkill_to_holder_leave_no_ray_process() -> None:
    """(d) SIGTERM to a process holding a cluster tears the cluster down
    (Terminated unwinds the `with`); SIGKILL too (PDEATHSIG -> ray start)."""
    term, kill = _start_holder(), _start_holder()
    t_info: dict = {}
    k_info: dict = {}
    try:
        t_info, k_info = _read_holder(term), _read_holder(kill)
        term.send_signal(signal.SIGTERM)
        kill.send_signal(signal.SIGKILL)
        assert term.wait(timeout=60) == 128 + signal.SIGTERM
        # the SIGTERMed holder stopped its cluster before exiting
        _assert_all_gone(t_info["pids"], t_info["sid"])
        assert not Path(t_info["temp_dir"]).exists()
        assert kill.wait(timeout=10) == -signal.SIGKILL
        # nobody ran our teardown: ray start --block got SIGTERM by PDEATHSIG
        assert _wait_session_gone(k_info["sid"], 30) == {}
        _assert_all_gone(k_info["pids"], k_info["sid"])
    finally:
        for p in (term, kill):
            if p.poll() is None:
                p.kill()
                p.wait()
    # the SIGKILLed holder could not remove its temp dir
    shutil.rmtree(k_info["temp_dir"], ignore_errors=True)


@pytest.mark.slow
def test_head_and_worker_join_two_nodes(tmp_path: Path) -> None:
    """(e) multi-node variant on one machine, through the sbatch-facing CLI:
    a head `node` task and a worker `node` task (own temp dirs and port
    blocks) form one 2-node cluster; `wait --nodes 2` returns the address;
    SIGTERM to each task stops its node's processes and nothing else."""
    addr_file = tmp_path / "ray.json"
    common = ["--address-file", str(addr_file), "--token", f"t{os.getpid()}", "--timeout", "90"]
    mod = [sys.executable, "-m", "rllm_sweeps.runtime.ray_cluster"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SLURM_JOB_NODELIST", None)

    def node(role: str, cpus: int) -> subprocess.Popen:
        argv = [*mod, "node", "--role", role, "--num-cpus", str(cpus), "--num-gpus", "0"]
        argv += ["--object-store-memory-mb", str(SMALL), *common]
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    procs = [node("head", 1), node("worker", 2)]  # worker polls for the head's file
    try:
        waited = subprocess.run(
            [*mod, "wait", "--nodes", "2", *common], env=env, capture_output=True, text=True, timeout=120
        )
        assert waited.returncode == 0, waited.stderr[-3000:]
        address = waited.stdout.strip().splitlines()[-1]
        infos = []
        for p in procs:
            assert p.stdout is not None
            line = p.stdout.readline()
            assert line, p.stderr.read() if p.stderr else ""
            infos.append(json.loads(line))
        head, worker = infos
        assert head["role"] == "head" and worker["role"] == "worker"
        assert head["address"] == worker["address"] == address
        assert head["temp_dir"] != worker["temp_dir"]
        nodes = wait_for_nodes(address, 2, timeout=30)
        assert sorted(n.is_head for n in nodes) == [False, True]
        assert sum(n.resources["CPU"] for n in nodes) == 3.0
        by_dir = {n.session_dir.rsplit("/", 1)[0]: n for n in nodes}
        assert by_dir[worker["temp_dir"]].resources["CPU"] == 2.0
        assert by_dir[head["temp_dir"]].is_head
        pids = {i["session_id"]: cluster_processes(i["session_id"]) for i in infos}
        assert all(len(v) >= 3 for v in pids.values())
        for p in reversed(procs):  # worker first, then head
            p.send_signal(signal.SIGTERM)
            assert p.wait(timeout=60) == 128 + signal.SIGTERM
        for sid, recorded in pids.items():
            _assert_all_gone(recorded, sid)
        assert not Path(head["temp_dir"]).exists() and not Path(worker["temp_dir"]).exists()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
