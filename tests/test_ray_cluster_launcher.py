"""`hydra/launcher=ray_cluster`: a sweep through Ray's Job Submission API, on a real local Ray
cluster this module starts (a head with no CPUs and one worker with 4 CPUs and a resource of its
own: jobs can only run on the worker), through the project's own node machinery (runtime/nodes.py:
each node stopped by its session, never `ray stop`). Each node runs in a network namespace of its
own, on its own address of a private bridge that this process reaches through a veth of its own
(tests/ray_network.py), as the local SLURM cluster's nodes do: the sweeper talks to the head over a
network, as it would to another machine. Needs root and iproute2 (skipped without them, failed in CI).

One 4-job sweep with parallel=2 through Ray, and the same plan as local processes, are run once per
module and read by the checks below. About 2.5 minutes on a 2-core machine.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("ray")

from ray_auth_checks import files_holding  # noqa: E402
from ray_network import Member, NodeInNetns, PrivateNetwork, require_network  # noqa: E402
from s3_server import S3Server, s3_server  # noqa: E402

from launchers.ray_task import staging_dirs  # noqa: E402
from rllm_sweeps.local_slurm.processes import proc_comm, proc_net_ns_inode  # noqa: E402
from rllm_sweeps.records import attempts  # noqa: E402
from rllm_sweeps.records.layout import SweepPaths  # noqa: E402
from rllm_sweeps.records.result import JobResult  # noqa: E402
from rllm_sweeps.records.store import StoreSync, mirror_dir  # noqa: E402
from rllm_sweeps.runtime.auth import AUTH_VARS, RayAuth  # noqa: E402
from rllm_sweeps.runtime.gcs import NodeInfo, wait_for_nodes  # noqa: E402
from rllm_sweeps.runtime.nodes import RayNode, client_env, start_node  # noqa: E402
from rllm_sweeps.runtime.ray_env import this_process_env  # noqa: E402
from rllm_sweeps.runtime.spec import RayClusterSpec  # noqa: E402

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SMALL = 100  # MB of object store
WORKER = "rllm_test_worker"  # the worker's own resource: where a job ran is read from Ray
# The cheapest real job: one step; 2 GB asked so two fit the worker on a CI machine.
QUICK = ["trainer.total_batches=1", "trainer.val_before_train=false", "trainer.test_freq=0", "task.dataset.val_size=8"]
QUICK += ["data.train_batch_size=8", "rollout.n=4", "resources.mem_gb=2"]
PLAN = ["trainer.lr=1e-3,2e-3,3e-3,4e-3", "hydra.sweeper.parallel=2", *QUICK]
# A head with a dashboard on a machine shared with other test runs (load 20 on 2 cores): its nine
# dashboard module processes import Ray at once, and one once took 29 s of Ray's 30 s to answer, so
# Ray ended the node. Patience, not less work: what the head does is unchanged.
PATIENT_HEAD_ENV = {"RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT": "120"}
PATIENT_HEAD_START_S = 180.0


@dataclass(frozen=True)
class Cluster:
    dashboard: str  # http://HEAD:PORT, the head's address on the private network
    worker_node_id: str
    head: NodeInNetns
    worker: NodeInNetns
    network: PrivateNetwork
    s3: S3Server  # an object store the nodes reach over the network, in their environment (AWS_ENDPOINT_URL)


def sweep_argv(sweep_dir: Path | str, *args: str) -> list[str]:
    """train.py -m ARGS in `sweep_dir` (a path, or a file:// URI: sweep/storage.py)."""
    return [sys.executable, str(REPO / "train.py"), "-m", *args, f"hydra.sweep.dir={sweep_dir}"]


def sweep_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without any Ray address or token of its own (the test's cluster decides)."""
    base = {k: v for k, v in os.environ.items() if k not in AUTH_VARS and k != "RAY_ADDRESS"}
    return {**base, "PYTHONPATH": str(REPO), **(extra or {})}


def sweep(sweep_dir: Path | str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    argv = sweep_argv(sweep_dir, *args)
    return subprocess.run(argv, cwd=REPO, env=sweep_env(env), capture_output=True, text=True, timeout=600)


def started_sweep(
    sweep_dir: Path | str, *args: str, log: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """A sweeper in its own session (signals reach it alone), its output kept in `log` (by default
    beside the sweep directory)."""
    if log is None:
        assert isinstance(sweep_dir, Path)
        log = sweep_dir.parent / f"{sweep_dir.name}.log"
    return subprocess.Popen(
        sweep_argv(sweep_dir, *args),
        cwd=REPO,
        env=sweep_env(env),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_until_started(sweep_dir: Path, jobs: int, timeout: float = 180) -> None:
    """Until `jobs` jobs' attempts have started on the cluster."""
    deadline = time.monotonic() + timeout
    while sum(bool(attempts.read_attempts(d)) for d in SweepPaths(sweep_dir).job_dirs()) < jobs:
        assert time.monotonic() < deadline, f"{jobs} jobs of {sweep_dir} did not start"
        time.sleep(0.5)


def start_cluster(
    network: PrivateNetwork, auth: RayAuth | None, worker_cpus: int, env: dict[str, str] | None = None
) -> tuple[NodeInNetns, NodeInNetns | None]:
    """A head (no CPUs where a worker comes: jobs run on the worker) and, given CPUs, one worker,
    each in a namespace of its own on `network`; the head's dashboard listens on its address there.
    `env`: the nodes' environment (an object store's address and credentials, as a cloud node has them)."""
    member = network.add("head")
    cpus = 0 if worker_cpus else 2
    head_spec = RayClusterSpec(
        num_cpus=cpus,
        object_store_memory_mb=SMALL,
        include_dashboard=True,
        dashboard_host=member.address,
        auth=auth,
        env={**PATIENT_HEAD_ENV, **(env or {})},
        start_timeout_s=PATIENT_HEAD_START_S,
    )
    with this_process_env(client_env(head_spec, member.address, head=True), drop=AUTH_VARS):
        head = start_node(NodeInNetns(head_spec, member))
    if not worker_cpus:
        return head, None
    assert head.address is not None
    try:
        worker = start_worker(
            network, head.address, "worker", worker_cpus, {WORKER: 1}, auth=auth, expect_nodes=2, env=env
        )
    except BaseException:
        head.stop()
        raise
    return head, worker


def start_worker(
    network: PrivateNetwork,
    head_address: str,
    role: str,
    cpus: int,
    resources: dict[str, float],
    *,
    expect_nodes: int,
    auth: RayAuth | None = None,
    env: dict[str, str] | None = None,
) -> NodeInNetns:
    """A worker in a new namespace of `network`, joined to the head at `head_address`, with `env`."""
    spec = RayClusterSpec(num_cpus=cpus, object_store_memory_mb=SMALL, resources=resources, auth=auth, env=env)
    member = network.add(role)
    with this_process_env(client_env(spec, member.address, head=False), drop=AUTH_VARS):
        return start_node(NodeInNetns(spec, member, head_address=head_address), expect_nodes)


def dashboard_url(head: NodeInNetns) -> str:
    return f"http://{head.member.address}:{head.ports.dashboard}"


def wait_for_dashboard(url: str, timeout: float = 90) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + "/api/authentication_mode", timeout=5)
            return
        except OSError:
            assert time.monotonic() < deadline, f"the dashboard at {url} did not answer"
            time.sleep(0.5)


def alive_nodes(head_address: str) -> list[NodeInfo]:
    """The cluster's live nodes as its GCS reports them (over the private network; no driver)."""
    with this_process_env({}, drop=(*AUTH_VARS, "RAY_ADDRESS")):
        return wait_for_nodes(head_address, 1)


def node_id_with(head_address: str, resource: str) -> str:
    """The id of the live node that has `resource` (each test node has one of its own)."""
    (node,) = [n for n in alive_nodes(head_address) if resource in n.resources]
    return node.node_id


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Cluster]:
    require_network()
    network = PrivateNetwork()
    try:
        # On the test process's address of the network: the nodes reach it as they would a store's host.
        with s3_server(network.address) as s3:
            head, worker = start_cluster(network, None, worker_cpus=4, env=s3.env)
            assert worker is not None
            try:
                url = dashboard_url(head)
                wait_for_dashboard(url)
                assert head.address is not None
                yield Cluster(url, node_id_with(head.address, WORKER), head, worker, network, s3)
            finally:
                worker.stop()
                head.stop()
    finally:
        network.close()


@dataclass(frozen=True)
class Sweeps:
    ray: Path
    local: Path
    ray_run: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def sweeps(ray_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Sweeps:
    root = tmp_path_factory.mktemp("ray_sweeps")
    # The Ray sweep's directory given as a pyarrow.fs URI, the local one's as a path: the same records.
    ray_run = sweep(
        (root / "ray").as_uri(), "hydra/launcher=ray_cluster", f"hydra.launcher.address={ray_cluster.dashboard}", *PLAN
    )
    assert ray_run.returncode == 0, ray_run.stdout[-3000:] + ray_run.stderr[-3000:]
    local = sweep(root / "local", *PLAN)
    assert local.returncode == 0, local.stdout[-3000:] + local.stderr[-3000:]
    return Sweeps(root / "ray", root / "local", ray_run)


def job_dirs(sweep_dir: Path) -> list[Path]:
    return sorted(SweepPaths(sweep_dir).job_dirs())


def ray_jobs(ray_cluster: Cluster) -> dict[str, object]:
    from ray.job_submission import JobSubmissionClient

    return {j.submission_id: j for j in JobSubmissionClient(ray_cluster.dashboard).list_jobs() if j.submission_id}


def raylet_of(node: RayNode) -> int:
    (pid,) = [p for p in node.pids() if proc_comm(p) == "raylet"]
    return pid


def test_the_clusters_nodes_each_run_in_a_network_namespace_of_their_own(ray_cluster: Cluster) -> None:
    here = proc_net_ns_inode(os.getpid())
    head, worker = ray_cluster.head, ray_cluster.worker
    spaces = {proc_net_ns_inode(raylet_of(node)) for node in (head, worker)}
    assert len(spaces) == 2 and here not in spaces and None not in spaces  # apart from us and each other
    assert spaces == {os.stat(node.member.path).st_ino for node in (head, worker)}  # the namespaces made for them
    # Every process of a node is in its namespace (nsenter exec'd `ray start`: the session is the node's).
    for node in (head, worker):
        assert {proc_net_ns_inode(p) for p in node.pids()} == {os.stat(node.member.path).st_ino}
    # The GCS knows each node by its bridge address; the sweeper's URL is the head's.
    assert head.address is not None
    addresses = {n.node_id: n.address for n in alive_nodes(head.address)}
    assert addresses[ray_cluster.worker_node_id] == worker.member.address
    assert head.member.address in addresses.values() and head.address.startswith(f"{head.member.address}:")
    assert ray_cluster.dashboard.startswith(f"http://{head.member.address}:")
    assert {head.member.address, worker.member.address} <= set(map(str, ray_cluster.network.subnet.hosts()))
    assert ray_cluster.network.address not in {head.member.address, worker.member.address}


def test_a_sweep_on_a_ray_cluster_runs_every_job_as_a_ray_job_on_the_worker(
    ray_cluster: Cluster, sweeps: Sweeps
) -> None:
    listed = ray_jobs(ray_cluster)
    assert ray_cluster.head.address is not None
    addresses = {n.node_id: n.address for n in alive_nodes(ray_cluster.head.address)}
    dirs = job_dirs(sweeps.ray)
    assert len(dirs) == 4
    for job_dir in dirs:
        (submitted,) = attempts.submissions(job_dir)
        (attempt,) = attempts.read_attempts(job_dir)
        assert attempt.scheduler_id == submitted.scheduler_id  # the Ray job id, in the attempt record
        job = listed[submitted.scheduler_id]
        assert job.status.value == "SUCCEEDED" and job.driver_exit_code == 0
        assert job.driver_node_id == ray_cluster.worker_node_id  # placed by its entrypoint resources
        assert addresses[job.driver_node_id] == ray_cluster.worker.member.address  # over the bridge
        assert job.metadata["rllm_sweeps_job_dir"] == str(job_dir)


def test_a_ray_sweep_keeps_two_jobs_in_flight_when_parallel_is_two(sweeps: Sweeps) -> None:
    spans = [(a.started_at, a.ended_at or 0.0) for d in job_dirs(sweeps.ray) for a in attempts.read_attempts(d)]
    most = max(sum(s <= t < e for s, e in spans) for t, _ in spans)
    assert most == 2


def test_a_ray_sweep_leaves_the_same_records_and_report_as_a_local_sweep(sweeps: Sweeps) -> None:
    def results(sweep_dir: Path) -> list[tuple]:
        out = []
        for d in job_dirs(sweep_dir):
            r = JobResult.read(d)
            assert r is not None
            out.append((d.name, r.status, r.config_hash, r.overrides, r.steps, r.final, r.best))
        return out

    def files(sweep_dir: Path) -> list[tuple[str, list[str]]]:
        return [(d.name, sorted(p.name for p in d.iterdir())) for d in job_dirs(sweep_dir)]

    def table(sweep_dir: Path) -> list[dict[str, str]]:
        with (sweep_dir / "report" / "jobs.csv").open() as f:
            return [{k: v for k, v in row.items() if "time" not in k} for row in csv.DictReader(f)]

    assert results(sweeps.ray) == results(sweeps.local)
    assert files(sweeps.ray) == files(sweeps.local)
    assert sorted(p.name for p in (sweeps.ray / "report").iterdir()) == sorted(
        p.name for p in (sweeps.local / "report").iterdir()
    )
    assert table(sweeps.ray) == table(sweeps.local)


def test_an_unauthenticated_ray_cluster_gets_a_one_line_warning(sweeps: Sweeps) -> None:
    warned = [line for line in sweeps.ray_run.stdout.splitlines() if "has no authentication" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: ")


def test_a_ray_cluster_launcher_without_an_address_is_refused_with_one_line(tmp_path: Path) -> None:
    run = sweep(tmp_path / "s", "hydra/launcher=ray_cluster", "trainer.lr=1e-3,2e-3", "hydra.sweeper.dry_run=true")
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and "hydra.launcher.address" in lines[0], run.stderr


class NodeOnItsOwnDisk(NodeInNetns):
    """A Ray node, in a network namespace of its own, whose processes see an empty file system of
    their own (a tmpfs, in a mount namespace) at `own`, where this machine has a directory: a
    machine that does not mount the sweep's storage."""

    def __init__(self, spec: RayClusterSpec, member: Member, own: Path) -> None:
        super().__init__(spec, member)
        self.own = own

    def command(self) -> list[str]:
        mount = 'mount -t tmpfs rllm-own-disk "$0" && exec "$@"'  # exec: the node's session stays this PID's
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(self.own), *super().command()]


def test_a_dry_run_on_a_cluster_that_does_not_see_the_sweeps_storage_is_refused_in_one_line(tmp_path: Path) -> None:
    require_network()  # root, and unshare for the mount namespace too
    storage = tmp_path / "storage"
    storage.mkdir()
    network = PrivateNetwork()
    try:
        member = network.add("disk")
        spec = RayClusterSpec(
            num_cpus=1,
            object_store_memory_mb=SMALL,
            include_dashboard=True,
            dashboard_host=member.address,
            env=PATIENT_HEAD_ENV,
            start_timeout_s=PATIENT_HEAD_START_S,
        )
        node = NodeOnItsOwnDisk(spec, member, own=storage)
        try:
            with this_process_env(client_env(spec, member.address, head=True), drop=AUTH_VARS):
                start_node(node)
            url = dashboard_url(node)
            wait_for_dashboard(url)
            args = ["hydra/launcher=ray_cluster", f"hydra.launcher.address={url}", "trainer.lr=1e-3", *QUICK]
            run = sweep((storage / "lr").as_uri(), *args, "hydra.sweeper.dry_run=true")
            lines = run.stderr.strip().splitlines()
            assert run.returncode == 2 and len(lines) == 1, run.stdout[-2000:] + run.stderr[-2000:]
            assert lines[0].startswith(f"error: nothing was submitted: hydra.sweep.dir={storage / 'lr'}: ")
            assert "a file the sweeper wrote there is not there for a job on the cluster" in lines[0]
            assert list(storage.iterdir()) == []  # the probe's question removed; the dry run wrote nothing
        finally:
            node.stop()
    finally:
        network.close()


def test_a_dry_run_with_a_store_the_clusters_nodes_do_not_reach_is_refused_in_one_line(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    """The sweeper's store listens on this machine's loopback, which no node reaches (each has its
    own): the probe job, on a node, cannot answer, and the dry run says so with the fix. The store
    the nodes reach passes the same dry run."""
    with s3_server("127.0.0.1") as private:
        private.make_bucket("rllm-private")
        uri = "s3://rllm-private/sweeps/lr"
        args = [*launcher_args(ray_cluster), "trainer.lr=1e-3", *QUICK, "hydra.sweeper.dry_run=true"]
        run = sweep(uri, *args, env=private.env)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1, run.stdout[-2000:] + run.stderr[-2000:]
        assert lines[0].startswith(f"error: nothing was submitted: hydra.sweep.dir={uri}: the Ray cluster at ")
        assert "does not reach the sweep directory's storage" in lines[0]
        assert lines[0].endswith("give the cluster's nodes the store's address and credentials (docs/RAY.md)")
        with pytest.MonkeyPatch.context() as patch:
            for key, value in private.env.items():
                patch.setenv(key, value)
            assert StoreSync(uri, tmp_path).stored_files() == {}  # the probe's question removed; nothing written
    reached, uri = ray_cluster.s3, f"s3://rllm-dry/sweeps/{uuid.uuid4().hex[:8]}"
    reached.make_bucket("rllm-dry")
    run = sweep(uri, *args, env=reached.env)
    # The plan a dry run keeps beside the sweep directory: beside the mirror, on this machine.
    Path(f"{mirror_dir(uri)}.dry-run-plan.json").unlink(missing_ok=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "no problem found" in run.stdout
    with pytest.MonkeyPatch.context() as patch:
        for key, value in reached.env.items():
            patch.setenv(key, value)
        assert StoreSync(uri, tmp_path).stored_files() == {}  # a dry run writes nothing there


def test_a_ray_job_records_the_sweeps_job_output_in_its_job_log(sweeps: Sweeps) -> None:
    for job_dir in job_dirs(sweeps.ray):
        assert json.loads((job_dir / "result.json").read_text())["status"] == "completed"
        assert (job_dir / "job.log").stat().st_size > 0


def launcher_args(ray_cluster: Cluster) -> list[str]:
    return ["hydra/launcher=ray_cluster", f"hydra.launcher.address={ray_cluster.dashboard}"]


def test_a_sweeper_killed_and_rerun_reattaches_to_its_ray_jobs_and_submits_none_twice(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    sweep_dir = tmp_path / "killed"
    args = [*launcher_args(ray_cluster), "trainer.lr=1e-3,2e-3", "hydra.sweeper.parallel=2", *QUICK]
    first = started_sweep(sweep_dir, *args)
    try:
        wait_until_started(sweep_dir, 2)
    finally:
        first.kill()  # SIGKILL: no cancel, no records written on the way out
        first.wait()
    rerun = sweep(sweep_dir, *args)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert rerun.stdout.count("reattached to job") == 2
    listed = ray_jobs(ray_cluster)
    for job_dir in job_dirs(sweep_dir):
        (submitted,) = attempts.submissions(job_dir)  # 0 duplicates
        assert len(attempts.read_attempts(job_dir)) == 1
        assert listed[submitted.scheduler_id].status.value == "SUCCEEDED"
    status = subprocess.run(
        [sys.executable, "-m", "rllm_sweeps.cli", "status", str(sweep_dir)],
        cwd=REPO,
        env=sweep_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = status.stdout.splitlines()
    assert lines[0].split()[:3] == ["job", "scheduler_id", "state"], status.stdout + status.stderr
    for line in lines[1:3]:
        assert line.split()[1].startswith("rllm-killed-") and line.split()[2] == "SUCCEEDED", status.stdout


def test_ctrl_c_stops_the_sweeps_ray_jobs_and_leaves_another_users_job_running(
    ray_cluster: Cluster, tmp_path: Path
) -> None:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(ray_cluster.dashboard)
    other = client.submit_job(entrypoint="sleep 600", submission_id=f"someone-else-{uuid.uuid4().hex[:8]}")
    try:
        sweep_dir = tmp_path / "interrupted"
        sweeper = started_sweep(sweep_dir, *launcher_args(ray_cluster), "trainer.lr=1e-3,2e-3", *QUICK)
        wait_until_started(sweep_dir, 1)
        sweeper.send_signal(signal.SIGINT)
        assert sweeper.wait(timeout=120) == 130
        ours = [s.scheduler_id for d in job_dirs(sweep_dir) for s in attempts.submissions(d)]
        assert ours and all(client.get_job_status(i).value == "STOPPED" for i in ours)
        assert client.get_job_status(other).value == "RUNNING"
    finally:
        client.stop_job(other)


def test_a_token_cluster_refuses_a_sweep_without_the_token_in_one_line_and_runs_one_with_it(tmp_path: Path) -> None:
    require_network()
    auth = RayAuth.fresh(tmp_path / "auth" / "token")
    token = auth.token_file.read_bytes().strip()
    network = PrivateNetwork()
    try:
        head, _ = start_cluster(network, auth, worker_cpus=0)  # a head alone, with CPUs for one job
    except BaseException:
        network.close()
        raise
    try:
        url = dashboard_url(head)
        wait_for_dashboard(url)
        args = ["hydra/launcher=ray_cluster", f"hydra.launcher.address={url}", "trainer.lr=1e-3", *QUICK]
        refused = sweep(tmp_path / "without", *args)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and len(lines) == 1, refused.stdout[-2000:] + refused.stderr[-2000:]
        assert "requires token authentication" in lines[0] and "RAY_AUTH_TOKEN" in lines[0]
        ran = sweep(tmp_path / "with", *args, env=auth.env())  # Ray's own variables: the mode and the token file
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
        assert "has no authentication" not in ran.stdout
        (job_dir,) = job_dirs(tmp_path / "with")
        assert JobResult.read(job_dir) is not None and JobResult.read(job_dir).status == "completed"
        # The token is in no record, log or output of the sweep.
        assert token not in (ran.stdout + ran.stderr).encode()
        assert files_holding(tmp_path / "with", token) == []
    finally:
        head.stop()
        network.close()


def test_a_jobs_resources_are_its_ray_jobs_entrypoint_resources() -> None:
    from launchers.ray_cluster import entrypoint_resources
    from rllm_sweeps.records.resources import Resources

    res = Resources(nodes=1, gpus_per_node=2, cpus_per_task=3, jobs_per_gpu=1, mem_gb=1.5, time_min=60)
    asked = {"entrypoint_num_cpus": 3, "entrypoint_num_gpus": 2, "entrypoint_memory": int(1.5 * 1024**3)}
    assert entrypoint_resources(res) == asked


STEPS = 4
# A job long enough to lose its node mid-run: a checkpoint after every step.
LONG = [a for a in QUICK if not a.startswith("trainer.total_batches=")]
LONG += [f"trainer.total_batches={STEPS}", "trainer.save_freq=1"]


def trained_steps(job_dir: Path) -> list[int]:
    from rllm_sweeps.records.metrics import read_metrics

    return [r["step"] for r in read_metrics(job_dir) if r.get("kind") == "train"]


def kill_node(node: RayNode) -> None:
    """A machine lost: every process of the node (its raylet, its workers, and the job processes
    they started) SIGKILLed at once, with nothing stopped in order."""
    for pid in node.pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def staged_job(mirror: Path) -> Path | None:
    """The job directory a job of the sweep mirrored at `mirror` runs in on its node (its staging
    directory, launchers/ray_task.py; the test's nodes share this machine's disk)."""
    found = [job for staging in staging_dirs(mirror.name) for job in staging.iterdir()]
    return found[0] if found else None


def training_process(job_dir: Path) -> int | None:
    """The PID of the training process that runs in `job_dir` (`hydra.run.dir=JOB_DIR` on its command line)."""
    wanted = f"hydra.run.dir={job_dir}".encode()
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and wanted in (entry / "cmdline").read_bytes().split(b"\0"):
                return int(entry.name)
    return None


def stored_steps(store: StoreSync, job: str) -> list[int]:
    """The train steps of a job's metrics as the object store holds them now."""
    text = (store.read_stored(f"{job}/metrics.jsonl") or b"").decode()
    rows = [json.loads(line) for line in text.splitlines() if line.endswith("}")]
    return [row["step"] for row in rows if row.get("kind") == "train"]


# The module's last test on its cluster: the node it kills may be the module's worker.
def test_a_job_on_an_object_store_whose_node_dies_is_resubmitted_and_resumes_from_its_stored_checkpoint(
    ray_cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's records on an S3 store the nodes reach over the network (no mount, no shared
    directory: each job runs in a staging directory of its node), its job's node killed once its
    first checkpoint is in the store: the job resumes from the store's checkpoint on another node,
    each step once in its metrics; then the same command from an empty mirror (another machine)
    finds the sweep completed and submits nothing. The job's training process is paused from its
    first checkpoint until the store has it (the store's S3 server is slower than training on a
    loaded machine), so the node dies mid-run, after a stored checkpoint, on any machine."""
    from ray.job_submission import JobSubmissionClient

    assert ray_cluster.head.address is not None
    s3 = ray_cluster.s3
    spare = start_worker(
        ray_cluster.network, ray_cluster.head.address, "spare", 4, {"rllm_test_spare": 1}, expect_nodes=3, env=s3.env
    )
    sweeper = None
    with contextlib.ExitStack() as cleanup:
        uri = f"s3://rllm-sweeps/lost-{uuid.uuid4().hex[:8]}"
        mirror = mirror_dir(uri)
        cleanup.callback(shutil.rmtree, mirror, ignore_errors=True)
        # The staging directory the lost node left (a machine lost takes its disk along; this one is shared).
        cleanup.callback(lambda: [shutil.rmtree(p, ignore_errors=True) for p in staging_dirs(mirror.name)])
        for key, value in s3.env.items():
            monkeypatch.setenv(key, value)
        s3.make_bucket("rllm-sweeps")  # the user's bucket
        store = StoreSync(uri, tmp_path / "unused")
        args = [*launcher_args(ray_cluster), "hydra.launcher.sync_interval_s=1", "trainer.lr=1e-3", *LONG]
        try:
            nodes = {ray_cluster.worker_node_id: ray_cluster.worker}
            nodes[node_id_with(ray_cluster.head.address, "rllm_test_spare")] = spare
            log = tmp_path / "lost.log"
            sweeper = started_sweep(uri, *args, log=log, env=s3.env)
            deadline = time.monotonic() + 300
            while (staged := staged_job(mirror)) is None or not (staged / "checkpoints" / "latest").exists():
                assert time.monotonic() < deadline and sweeper.poll() is None, log.read_text()[-3000:]
                time.sleep(0.05)
            training = training_process(staged)
            assert training is not None, f"no training process runs in {staged}"
            os.kill(training, signal.SIGSTOP)  # paused: its node's sender goes on sending
            job = f"jobs/{staged.name}"
            while not stored_steps(store, job) or (store.read_stored(f"{job}/checkpoints/latest") is None):
                assert time.monotonic() < deadline and sweeper.poll() is None, "the checkpoint did not reach the store"
                time.sleep(0.2)
            stored_at = int(store.read_stored(f"{job}/checkpoints/latest").decode().strip().removeprefix("step_"))
            assert stored_at < STEPS  # the node dies mid-run
            job_dir = mirror / job
            (first,) = attempts.submissions(job_dir)
            client = JobSubmissionClient(ray_cluster.dashboard)
            lost = client.get_job_info(first.scheduler_id).driver_node_id
            kill_node(nodes[lost])
            assert sweeper.wait(timeout=420) == 0, log.read_text()[-3000:]

            result = JobResult.read(job_dir)  # the mirror's copy, fetched from the store
            assert result is not None and result.status == "completed"
            assert json.loads(store.read_stored(f"{job}/result.json") or b"{}")["status"] == "completed"
            assert result.retries == 1 and result.restarts >= 1  # resubmitted once; resumed from its checkpoint
            first_again, second = attempts.submissions(job_dir)
            assert first_again.scheduler_id == first.scheduler_id
            rerun = client.get_job_info(second.scheduler_id)
            assert rerun.status.value == "SUCCEEDED" and rerun.driver_node_id != lost  # elsewhere
            addresses = {n.node_id: n.address for n in alive_nodes(ray_cluster.head.address)}
            assert addresses[rerun.driver_node_id] == nodes[rerun.driver_node_id].member.address  # its bridge address
            # How Ray 2.57 reports it: FAILED, no exit code, its supervisor actor dead with its node (GCS's words).
            lost_job = client.get_job_info(first.scheduler_id)
            assert lost_job.status.value == "FAILED" and lost_job.driver_exit_code is None
            assert lost_job.error_type == "JOB_SUPERVISOR_ACTOR_DIED"
            (reason,) = result.retry_reasons  # the sweep's one-line record of why it resubmitted
            assert reason.startswith("Ray job FAILED (JOB_SUPERVISOR_ACTOR_DIED): ") and "its node has died" in reason
            assert trained_steps(job_dir) == list(range(1, STEPS + 1))  # no step lost, none repeated
            assert stored_steps(store, job) == list(range(1, STEPS + 1))
            # The checkpoints went between the nodes and the store only; the job ran in no directory of the sweeper's.
            assert any("/checkpoints/step_" in p for p in store.stored_files(job))
            assert not (job_dir / "checkpoints").exists()
            # Another machine: the same command, no mirror yet.
            shutil.rmtree(mirror)
            again = sweep(uri, *args, env=s3.env)
            assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
            assert "1 jobs already completed" in again.stdout
            assert len(attempts.submissions(job_dir)) == 2  # nothing submitted again
            shutil.rmtree(mirror)  # `rllm-sweeps status` by the store's URI, from a third machine
            status = subprocess.run(
                [sys.executable, "-m", "rllm_sweeps.cli", "status", uri],
                cwd=REPO,
                env=sweep_env(s3.env),
                capture_output=True,
                text=True,
                timeout=120,
            )
            (row,) = status.stdout.splitlines()[1:2]
            shown = status.stdout + status.stderr
            assert row.split()[1] == second.scheduler_id and row.split()[2] == "SUCCEEDED", shown
        finally:
            if sweeper is not None and sweeper.poll() is None:
                sweeper.kill()
            spare.stop()
