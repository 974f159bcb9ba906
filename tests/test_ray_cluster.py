"""The job's Ray cluster (``runtime/job_ray.py``) and the pieces it is built from, against real
Ray (no mocks).

Each slow test starts real `ray start --block` processes through the job's own path
(``job_ray_cluster`` on rank 0, ``train.py`` on rank k > 0 of a multi-node allocation);
the whole file takes roughly 1 minute on a 2-core machine.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from ray_auth_checks import assert_listens_in_its_block, assert_token_only_in_its_file, job_token  # noqa: E402

from rllm_sweeps.records.layout import JobPaths  # noqa: E402
from rllm_sweeps.runtime.auth import AUTH_VARS, RayAuth  # noqa: E402
from rllm_sweeps.runtime.errors import RayClusterError  # noqa: E402
from rllm_sweeps.runtime.gcs import tcp_reachable, wait_for_nodes  # noqa: E402
from rllm_sweeps.runtime.job_ray import RAY_FILE, job_ray_cluster, worker_file  # noqa: E402
from rllm_sweeps.runtime.nodes import client_env, start_head_node  # noqa: E402
from rllm_sweeps.runtime.ports import RayPorts, allocate_ports  # noqa: E402
from rllm_sweeps.runtime.processes import cluster_processes, pid_alive  # noqa: E402
from rllm_sweeps.runtime.ray_env import this_process_env  # noqa: E402
from rllm_sweeps.runtime.slurm_env import slurm_node_resources  # noqa: E402
from rllm_sweeps.runtime.spec import MAX_TEMP_DIR_LEN, RayClusterSpec  # noqa: E402

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

# A rank 0 holding its job's Ray cluster as job/train.py does, with the runtime's SIGTERM handling:
# prints what it brought up, then holds it until its stdin closes.
HOLDER = textwrap.dedent(
    """
    import dataclasses, json, os, sys
    from pathlib import Path
    from rllm_sweeps.runtime.job_ray import job_ray_cluster
    from rllm_sweeps.runtime.signals import sigterm_raises

    job_dir, cpus, nodes = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with sigterm_raises():
        with job_ray_cluster(job_dir, num_cpus=cpus, num_gpus=0, nodes=nodes) as ray:
            print(json.dumps({"address": ray.address, "RAY_ADDRESS": os.environ["RAY_ADDRESS"],
                              "nodes": [dataclasses.asdict(n) for n in ray.nodes],
                              "pids": list(ray.record.pids), "connect_env": ray.record.connect_env}), flush=True)
            sys.stdin.read()
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


def _env(**extra: str) -> dict[str, str]:
    """This environment outside any SLURM job (the attempt token is None), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.pop("RAY_ADDRESS", None)
    return {**env, **extra}


def _session(pids: list[int]) -> tuple[int, dict[int, int]]:
    """The node's session id (shared by its processes: Ray's own setpgrp keeps the session) and
    its live {pid: starttime}, while the node runs."""
    sids: collections.Counter[int] = collections.Counter()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # a short-lived process of the node
            sids[os.getsid(pid)] += 1
    sid = sids.most_common(1)[0][0]
    return sid, cluster_processes(sid)


def _idle_workers(session_id: int, wait_s: float) -> list[str]:
    """The command lines of the node's idle Python workers (`ray::IDLE`) seen within `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        seen = []
        for pid in cluster_processes(session_id):
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if cmdline.startswith("ray::IDLE"):
                    seen.append(cmdline.strip())
        if seen or time.monotonic() > deadline:
            return seen
        time.sleep(0.2)


def _assert_all_gone(pids: list[int], starts: dict[int, int], session_id: int) -> None:
    alive = [p for p in pids if pid_alive(p, starts.get(p))]
    assert alive == [], f"cluster processes survived: {alive}"
    assert cluster_processes(session_id) == {}


def _record(job_dir: Path) -> dict:
    return json.loads((job_dir / RAY_FILE).read_text())


def _temp_dir(node: dict) -> Path:
    return Path(node["session_dir"]).parent


# ---------------------------------------------------------------- cheap ones


def test_spec_rejects_long_temp_dir() -> None:
    long_dir = Path("/tmp") / ("x" * MAX_TEMP_DIR_LEN)
    with pytest.raises(ValueError, match="107-byte"):
        RayClusterSpec(num_cpus=1, temp_dir=long_dir)


def test_a_head_listens_for_dashboard_clients_on_the_host_its_spec_names_and_else_on_rays_default() -> None:
    from rllm_sweeps.runtime.commands import head_command

    ports, temp = RayPorts.from_base(20000), Path("/tmp/rr-x")
    given = head_command(RayClusterSpec(num_cpus=1, dashboard_host="10.251.0.2"), ports, temp, node_ip="10.251.0.2")
    assert "--dashboard-host=10.251.0.2" in given
    assert not any(a.startswith("--dashboard-host") for a in head_command(RayClusterSpec(num_cpus=1), ports, temp))


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


def test_a_port_block_locked_by_another_node_or_in_use_elsewhere_is_skipped(tmp_path, monkeypatch) -> None:
    # Three blocks of 16 ports outside the range real clusters use (20000-32768), own lock dir.
    lo, size = 14016, 16
    monkeypatch.setenv("RLLM_RAY_PORT_LOCK_DIR", str(tmp_path))
    monkeypatch.setenv("RLLM_RAY_PORT_RANGE", f"{lo}-{lo + 3 * size}")
    with allocate_ports(size) as a, allocate_ports(size) as b:
        assert a.ports.gcs != b.ports.gcs  # a held lease keeps its block from every other node
        (free,) = {lo, lo + size, lo + 2 * size} - {a.ports.gcs, b.ports.gcs}
        with socket.socket() as busy:  # one worker port of the last block is taken by a stranger
            busy.bind(("", free + size - 1))
            busy.listen()
            with pytest.raises(RayClusterError, match="no free block"):
                allocate_ports(size)
        taken = a.ports.gcs
        a.release()
        with allocate_ports(size) as c:
            assert c.ports.gcs in {taken, free} and c.ports.gcs != b.ports.gcs


def test_a_fresh_token_is_new_each_time_and_the_users_alone(tmp_path) -> None:
    path = tmp_path / "job" / "ray-auth-token"
    first = RayAuth.fresh(path)
    token = path.read_bytes()
    assert first.token_file == path and os.stat(path).st_mode & 0o777 == 0o600
    assert RayAuth.fresh(path) == first and path.read_bytes() != token  # a new attempt: a new token
    assert len(path.read_text().strip()) == 64 and token.strip().decode() not in repr(first)
    assert RayAuth.existing(path) == first
    path.chmod(0o640)  # readable by the group: a worker node refuses it
    with pytest.raises(RayClusterError, match="mode 0600"):
        RayAuth.existing(path)
    with pytest.raises(RayClusterError, match="rank 0 writes it first"):
        RayAuth.existing(tmp_path / "none")


def test_listening_sockets_of_a_process_are_read_with_their_address_and_port() -> None:
    from rllm_sweeps.runtime.listeners import Listener, listening

    with socket.socket() as v4, socket.socket(socket.AF_INET6) as v6:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        v6.bind(("::", 0))
        v6.listen()
        found = listening([os.getpid()])
        comm = Path("/proc/self/comm").read_text().strip()
        assert Listener("127.0.0.1", v4.getsockname()[1], comm) in found
        assert Listener("::", v6.getsockname()[1], comm) in found
        assert {s.loopback_only for s in found if s.port in (v4.getsockname()[1], v6.getsockname()[1])} == {
            True,
            False,
        }


# ------------------------------------------------------------- real clusters


@pytest.mark.slow
def test_a_dashboard_asked_for_refuses_requests_without_the_clusters_token(tmp_path) -> None:
    """The dashboard is off unless asked for; on, its HTTP API wants the cluster's bearer token."""
    import urllib.error
    import urllib.request

    mine, other = RayAuth.fresh(tmp_path / "mine"), RayAuth.fresh(tmp_path / "other")
    spec = RayClusterSpec(num_cpus=1, object_store_memory_mb=SMALL, include_dashboard=True, auth=mine)
    with this_process_env(client_env(spec, None, head=True), drop=AUTH_VARS):
        head = start_head_node(spec)
    try:
        url = f"http://127.0.0.1:{head.ports.dashboard}/api/version"

        def status(token_file: Path | None) -> int:
            headers = {} if token_file is None else {"Authorization": f"Bearer {token_file.read_text().strip()}"}
            deadline = time.monotonic() + 60
            while True:
                try:
                    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10).status
                except urllib.error.HTTPError as err:
                    return err.code
                except OSError:  # the dashboard is still starting
                    assert time.monotonic() < deadline
                    time.sleep(0.5)

        assert status(mine.token_file) == 200
        assert status(None) == 401  # no token
        assert status(other.token_file) == 403  # another cluster's token
    finally:
        head.stop()


@pytest.mark.slow
def test_job_cluster_exports_its_address_and_stops_everything(tmp_path, monkeypatch) -> None:
    """(a) RAY_ADDRESS points at the job's cluster and a bare ray.init() in a child sees
    num_cpus as given; (c) after exit none of its processes remain."""
    decoy = "127.0.0.1:1"  # another cluster's address must never be used
    monkeypatch.setenv("RAY_ADDRESS", decoy)
    for key in [k for k in os.environ if k.startswith("SLURM_")]:
        monkeypatch.delenv(key)
    with job_ray_cluster(tmp_path, num_cpus=3, num_gpus=0, nodes=1) as ray:  # 3 > cores: from the caller
        assert os.environ["RAY_ADDRESS"] == ray.address == _record(tmp_path)["address"]
        # Token authentication, with this attempt's token in the job directory (0600), its path
        # in this process's environment and ray.json, the token itself in neither.
        record = _record(tmp_path)
        token = job_token(tmp_path)
        assert record["auth"] == "token" and record["connect_env"]["RAY_AUTH_MODE"] == "token"
        assert os.environ["RAY_AUTH_TOKEN_PATH"] == record["connect_env"]["RAY_AUTH_TOKEN_PATH"]
        assert Path(os.environ["RAY_AUTH_TOKEN_PATH"]) == JobPaths(tmp_path).ray_auth_token
        assert_token_only_in_its_file(tmp_path, tmp_path, token)
        # One node: on loopback, every port in its block.
        assert ray.address.startswith("127.0.0.1:")
        assert_listens_in_its_block(record, loopback=True)
        (head,) = ray.nodes
        assert head.is_head and ray.node_count == 1 == _record(tmp_path)["nodes"]
        # the node runs on the port block it holds: GCS at the base, node manager in the layout
        ports = RayPorts.from_base(int(ray.address.rpartition(":")[2]))
        assert head.node_manager_port == ports.node_manager
        got = _child_ray_init(dict(os.environ))
        assert got == {"gcs": ray.address, "cpus": 3.0, "nodes": 1, "probe": "ok"}
        sid, live = _session(list(ray.record.pids))
        assert sid in live and len(live) >= 4  # ray start, gcs, raylet, ...
        # The driver's connection started no idle worker (Ray's default: one per CPU, here 3),
        # since no work asked for one (nodes.py: RAY_prestart_worker_first_driver=0).
        assert _idle_workers(sid, wait_s=3.0) == []
        # a start that cannot work (on this cluster's ports) fails fast, names its log, and
        # leaves the job's cluster alone
        clash = RayClusterSpec(num_cpus=1, object_store_memory_mb=SMALL, port=ports.gcs)
        with pytest.raises(RayClusterError, match=r"ray-start\.log") as err:
            start_head_node(clash)
        shutil.rmtree(str(err.value).split("log: ")[1].split()[0].rsplit("/", 1)[0])
        assert os.environ["RAY_ADDRESS"] == ray.address
        assert len(wait_for_nodes(ray.address, 1, timeout=10)) == 1
        temp_dir = Path(head.session_dir).parent
    assert os.environ["RAY_ADDRESS"] == decoy  # restored
    assert "RAY_AUTH_TOKEN_PATH" not in os.environ  # and the job's token path is gone with the cluster
    _assert_all_gone(_record(tmp_path)["pids"], live, sid)
    assert not temp_dir.exists()


def _start_holder(job_dir: Path, cpus: int, nodes: int = 1, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(job_dir), str(cpus), str(nodes)],
        cwd=REPO,
        env=_env(**env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_holder(p: subprocess.Popen) -> dict:
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line, p.stderr.read() if p.stderr else ""
    info = json.loads(line)
    info["sid"], info["procs"] = _session(info["pids"])
    return info


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.slow
def test_two_job_clusters_at_once_get_distinct_addresses(tmp_path) -> None:
    """(b) two jobs on one machine, started concurrently, don't collide."""
    cpus = {"a": 1, "b": 2}
    holders = {name: _start_holder(tmp_path / name, n) for name, n in cpus.items()}
    try:
        infos = {name: _read_holder(p) for name, p in holders.items()}  # both up at once
        for name, info in infos.items():
            assert info["RAY_ADDRESS"] == info["address"]
            got = _child_ray_init(_env(RAY_ADDRESS=info["RAY_ADDRESS"], **info["connect_env"]))
            assert got["gcs"] == info["address"]
            assert got["cpus"] == float(cpus[name])
            assert got["probe"] == "ok"
        a, b = infos["a"], infos["b"]
        assert a["address"] != b["address"]
        ports = {n: set(RayPorts.from_base(int(i["address"].rpartition(":")[2])).all_ports()) for n, i in infos.items()}
        assert not ports["a"] & ports["b"]
        for p in holders.values():
            assert p.stdin is not None
            p.stdin.close()  # the job ends
            assert p.wait(timeout=60) == 0, p.stderr.read() if p.stderr else ""
        for name, info in infos.items():
            _assert_all_gone(_record(tmp_path / name)["pids"], info["procs"], info["sid"])
            assert not _temp_dir(info["nodes"][0]).exists()
    finally:
        _kill(list(holders.values()))


def _wait_session_gone(sid: int, timeout: float) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = cluster_processes(sid)
        if not left:
            return {}
        time.sleep(0.1)
    return cluster_processes(sid)


@pytest.mark.slow
def test_sigterm_and_sigkill_to_holder_leave_no_ray_process(tmp_path) -> None:
    """(d) SIGTERM to a process holding its job's cluster tears the cluster down
    (Terminated unwinds the `with`); SIGKILL too (PDEATHSIG -> ray start)."""
    term, kill = _start_holder(tmp_path / "term", 1), _start_holder(tmp_path / "kill", 1)
    k_info: dict = {}
    try:
        t_info, k_info = _read_holder(term), _read_holder(kill)
        term.send_signal(signal.SIGTERM)
        kill.send_signal(signal.SIGKILL)
        assert term.wait(timeout=60) == 128 + signal.SIGTERM
        # the SIGTERMed holder stopped its cluster before exiting
        _assert_all_gone(_record(tmp_path / "term")["pids"], t_info["procs"], t_info["sid"])
        assert not _temp_dir(t_info["nodes"][0]).exists()
        assert kill.wait(timeout=10) == -signal.SIGKILL
        # nobody ran our teardown: ray start --block got SIGTERM by PDEATHSIG
        assert _wait_session_gone(k_info["sid"], 30) == {}
        _assert_all_gone(k_info["pids"], k_info["procs"], k_info["sid"])
    finally:
        _kill([term, kill])
    # the SIGKILLed holder could not remove its temp dir
    if k_info:
        shutil.rmtree(_temp_dir(k_info["nodes"][0]), ignore_errors=True)


@pytest.mark.slow
def test_head_and_worker_join_two_nodes(tmp_path: Path) -> None:
    """(e) the multi-node protocol on one machine: rank 0's job_ray_cluster(nodes=2) and rank 1's
    `python train.py ...` (the job's own command; own temp dirs and port blocks) form one 2-node
    cluster before the job gets its address; SIGTERM to each task stops its node's processes
    and nothing else."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    # One allocation of two nodes, both on this machine (the same job id: the same attempt token).
    slurm = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NODELIST": "localhost", "SLURM_JOB_NUM_NODES": "2"}
    head = _start_holder(job_dir, 1, nodes=2, **slurm)
    worker = subprocess.Popen(  # the job's command, on node 1: it polls for rank 0's ray.json
        [sys.executable, str(REPO / "train.py"), "trainer.total_batches=1", f"hydra.run.dir={job_dir}"],
        cwd=REPO,
        env=_env(**slurm, SLURM_NODEID="1", SLURM_PROCID="1", SLURM_CPUS_ON_NODE="2", SLURM_GPUS_ON_NODE="0"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = _read_holder(head)  # only after both nodes are alive
        address = info["address"]
        record = _record(job_dir)
        assert record["address"] == address and record["nodes"] == 2 and len(record["node_addresses"]) == 2
        nodes = info["nodes"]
        assert sorted(n["is_head"] for n in nodes) == [False, True]
        assert sum(n["resources"]["CPU"] for n in nodes) == 3.0
        (w_node,) = [n for n in nodes if not n["is_head"]]
        (h_node,) = [n for n in nodes if n["is_head"]]
        assert w_node["resources"]["CPU"] == 2.0  # SLURM's CPUs of the worker's node
        assert _temp_dir(h_node) != _temp_dir(w_node)
        deadline = time.monotonic() + 30
        while not worker_file(job_dir, 1).exists():
            assert time.monotonic() < deadline and worker.poll() is None, worker.stderr.read()[-3000:]
            time.sleep(0.1)
        mine = json.loads(worker_file(job_dir, 1).read_text())
        assert mine["head"] == address
        w_sid, w_procs = _session(mine["pids"])
        assert len(info["procs"]) >= 3 and len(w_procs) >= 3
        assert w_sid != info["sid"] and not set(w_procs) & set(info["procs"])

        worker.send_signal(signal.SIGTERM)  # the worker's task first ...
        assert worker.wait(timeout=60) == 128 + signal.SIGTERM, worker.stderr.read()[-3000:]
        _assert_all_gone(json.loads(worker_file(job_dir, 1).read_text())["pids"], w_procs, w_sid)
        assert not _temp_dir(w_node).exists()
        # ... stops its node and nothing else: the head still runs and answers
        assert pid_alive(info["sid"], info["procs"][info["sid"]]) and tcp_reachable(address)
        # (this process asks the head's GCS as a client: only with the job's token, which it may read)
        with pytest.raises(RayClusterError, match="InvalidAuthToken"):
            wait_for_nodes(address, 1, timeout=2)
        with this_process_env(info["connect_env"], drop=AUTH_VARS):
            assert len(wait_for_nodes(address, 1, timeout=10, where=lambda n: n.is_head)) == 1

        head.send_signal(signal.SIGTERM)  # ... then rank 0's
        assert head.wait(timeout=60) == 128 + signal.SIGTERM
        _assert_all_gone(_record(job_dir)["pids"], info["procs"], info["sid"])
        assert not _temp_dir(h_node).exists()
    finally:
        _kill([worker, head])


@pytest.mark.slow
def test_ray_actors_given_the_jobs_jax_cache_options_compile_into_the_jobs_cache(tmp_path: Path) -> None:
    """RayJaxBackend's JAX processes are Ray actors, which the job's jax.config does not reach: the
    actor options carry the cache settings (training/jax_backend.py), and JAX in the actor uses them."""
    import ray

    from rllm_sweeps.training.jax_backend import with_jax_cache_env

    cache = tmp_path / "jax"
    cache.mkdir()

    @ray.remote
    def compile_a_program() -> str:
        import jax
        import jax.numpy as jnp

        jax.jit(lambda x: x * 2 + 1)(jnp.arange(3)).block_until_ready()
        return str(jax.config.jax_compilation_cache_dir)

    with job_ray_cluster(tmp_path / "job", num_cpus=1, num_gpus=0, nodes=1) as cluster:
        ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
        try:
            options = with_jax_cache_env({"num_cpus": 1}, cache)
            assert ray.get(compile_a_program.options(**options).remote(), timeout=300) == str(cache)
        finally:
            ray.shutdown()
    assert any(cache.iterdir())  # the actor's compiled program was written to the job's cache
