"""The sweep runner's decisions, in milliseconds: retries, fencing, reattachment, the parallel limit.

The launcher here is a scripted, in-memory one: it stands for no scheduler (the real SLURM and
local launchers are tested on the real systems in test_slurm_*.py and test_sweep_run.py); it
only plays back what a job's process and its scheduler would report, so that each decision of
`SweepRunner` can be checked alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from launchers.base import JobState, Launcher, LaunchRequest, PollStatus
from rllm_sweeps.records import attempts
from rllm_sweeps.records.plan import Metric, PlannedJob
from rllm_sweeps.records.resources import Resources
from rllm_sweeps.records.result import JobResult
from rllm_sweeps.records.status import FailureKind, JobStatus
from rllm_sweeps.sweep.runner import StaticSource, SweepRunner, job_dir_for

SHAPE = Resources(nodes=1, gpus_per_node=0, cpus_per_task=2, jobs_per_gpu=1, mem_gb=8, time_min=60)


@dataclass
class Outcome:
    """What one attempt of a job does: the result it writes (None: none) and how the scheduler ends it."""

    status: str | None = JobStatus.COMPLETED
    failure: str | None = None  # the scheduler's infrastructure reason
    kind: FailureKind | None = None  # whose fault the end was, as the scheduler saw it
    detail: str = "scripted"
    returncode: int = 0
    polls: int = 2  # polls before it ends
    log: str = ""


@dataclass
class Handle:
    request: LaunchRequest
    outcome: Outcome
    polls: int = 0
    cancelled: bool = False


@dataclass
class ScriptedLauncher(Launcher):
    """Plays back each job's scripted attempts (by plan index), in order."""

    script: dict[int, list[Outcome]]
    queues_arrays: bool = False
    live_to_reattach: dict[Path, Outcome] = field(default_factory=dict)
    name: str = "scripted"
    submitted: list[int] = field(default_factory=list)
    live: set[int] = field(default_factory=set)
    max_live: int = 0
    live_before_single_submits: list[int] = field(default_factory=list)  # jobs live when one more was submitted
    cancelled: list[int] = field(default_factory=list)

    def submit(self, request: LaunchRequest) -> Handle:
        self.live_before_single_submits.append(len(self.live))
        return self._submit(request)

    def _submit(self, request: LaunchRequest) -> Handle:
        outcome = self.script[request.index].pop(0)
        self.submitted.append(request.index)
        self._went_live(request.index)
        return Handle(request, outcome)

    def submit_array(self, requests: list[LaunchRequest], parallel: int) -> list[Handle]:
        # The scheduler holds them all and runs `parallel` at a time (SLURM's array throttle).
        return [self._submit(r) for r in requests]

    def _went_live(self, index: int) -> None:
        self.live.add(index)
        self.max_live = max(self.max_live, len(self.live))

    def poll(self, handle: Handle) -> PollStatus:
        handle.polls += 1
        if handle.polls < handle.outcome.polls:
            return PollStatus(JobState.RUNNING)
        o = handle.outcome
        if o.status is not None:
            JobResult(status=o.status, config_hash=f"h{handle.request.index}", steps=3).write(handle.request.job_dir)
        self.live.discard(handle.request.index)
        return PollStatus(
            JobState.FINISHED, returncode=o.returncode, detail=o.detail, failure=o.failure, log=o.log, kind=o.kind
        )

    def cancel(self, handle: Handle) -> None:
        handle.cancelled = True
        if handle.request.index in self.live:
            self.cancelled.append(handle.request.index)
        self.live.discard(handle.request.index)

    def reattach(self, job_dirs: list[Path]) -> dict[Path, Any]:
        found = {}
        for job_dir in job_dirs:
            if job_dir in self.live_to_reattach:
                index = int(job_dir.name.split("-")[0])
                request = LaunchRequest(index=index, job_dir=job_dir, argv=[], resources=SHAPE)
                self._went_live(index)
                found[job_dir] = Handle(request, self.live_to_reattach[job_dir])
        return found


def planned(n: int) -> list[PlannedJob]:
    return [PlannedJob(i, [f"trainer.seed={i}"], {}, f"p{i}", i, None, f"h{i}", SHAPE) for i in range(n)]


def run_sweep(tmp_path: Path, launcher: ScriptedLauncher, n: int, parallel: int = 2, max_retries: int = 2):
    source = StaticSource(SimpleNamespace(jobs=planned(n)), tmp_path)
    runner = SweepRunner(source, tmp_path, launcher, parallel, metric=Metric(), max_retries=max_retries)
    runner.progress_every_s = 1e9
    start = time.monotonic()
    results = runner.run()
    assert time.monotonic() - start < 30
    return results


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr("rllm_sweeps.sweep.runner.time.sleep", lambda s: None)


def test_an_infrastructure_failure_is_retried_until_it_completes(tmp_path):
    node_fail = Outcome(status=None, failure="node failure (SLURM state NODE_FAIL)", returncode=1)
    launcher = ScriptedLauncher({0: [node_fail, Outcome()]})
    results = run_sweep(tmp_path, launcher, 1)
    assert launcher.submitted == [0, 0]
    assert results[0].status == JobStatus.COMPLETED and results[0].retries == 1
    assert "NODE_FAIL" in results[0].retry_reasons[0]


def test_retries_stop_at_max_retries_and_the_job_is_recorded_failed(tmp_path):
    node_fail = Outcome(status=None, failure="node failure", returncode=1)
    launcher = ScriptedLauncher({0: [node_fail, node_fail, node_fail]})
    results = run_sweep(tmp_path, launcher, 1, max_retries=2)
    assert launcher.submitted == [0, 0, 0]
    assert results[0].status == JobStatus.FAILED and results[0].failure_kind == "infrastructure"
    assert results[0].retries == 2


def test_a_user_failure_is_not_retried(tmp_path):
    launcher = ScriptedLauncher({0: [Outcome(status=None, returncode=1, log="Traceback: ZeroDivisionError")]})
    results = run_sweep(tmp_path, launcher, 1)
    assert launcher.submitted == [0]
    assert results[0].status == JobStatus.FAILED and results[0].failure_kind == "user"
    assert "ZeroDivisionError" in results[0].error  # the scheduler's log tail, for a job that left none


def test_a_job_preempted_by_its_last_time_limit_with_its_requeues_spent_fails_as_time_limit_with_the_fix(tmp_path):
    from launchers.slurm_states import classify_end

    end = classify_end("TIMEOUT")  # what the SLURM launcher reports of it
    spent = Outcome(status=JobStatus.PREEMPTED, returncode=end.returncode, kind=end.kind, detail=end.reason)
    launcher = ScriptedLauncher({0: [spent]})
    results = run_sweep(tmp_path, launcher, 1)
    assert launcher.submitted == [0]  # not retried: the same job would run out of time again
    assert results[0].status == JobStatus.FAILED and results[0].failure_kind == FailureKind.TIME_LIMIT
    assert "resources.time_min" in results[0].error and "max_requeues" in results[0].error
    (recorded,) = [JobResult.read(p.parent) for p in tmp_path.glob("jobs/*/result.json")]
    assert recorded.status == JobStatus.FAILED and recorded.failure_kind == FailureKind.TIME_LIMIT


def test_a_job_that_left_no_result_says_so_with_the_schedulers_reason(tmp_path):
    launch = "srun: error: Task launch for StepId=7.0 failed on node n1: Communication connection failure"
    failed = Outcome(status=None, failure=f"SLURM could not launch the job's step: {launch}", returncode=1, log=launch)
    launcher = ScriptedLauncher({0: [failed, Outcome()]})
    results = run_sweep(tmp_path, launcher, 1)
    assert results[0].status == JobStatus.COMPLETED and results[0].retries == 1
    assert "Task launch for StepId=7.0 failed on node n1" in results[0].retry_reasons[0]


def test_a_job_that_saw_only_its_lost_nodes_sigterm_is_an_infrastructure_failure_not_a_preemption(tmp_path):
    # The process on a node SLURM declared dead got SIGTERM and wrote "preempted".
    lost = Outcome(status=JobStatus.PREEMPTED, failure="node failure (SLURM state NODE_FAIL)", returncode=143)
    launcher = ScriptedLauncher({0: [lost, Outcome()]})
    results = run_sweep(tmp_path, launcher, 1)
    assert launcher.submitted == [0, 0] and results[0].retries == 1 and results[0].status == JobStatus.COMPLETED


@pytest.mark.parametrize("arrays", [False, True], ids=["one-by-one", "arrays"])
def test_retries_wait_for_a_free_slot_so_no_more_than_parallel_jobs_are_ever_live(tmp_path, arrays):
    node_fail = Outcome(status=None, failure="node failure", returncode=1, polls=1)
    script = {i: [Outcome(polls=3 + i)] for i in range(6)}
    script[0] = [node_fail, Outcome()]
    script[1] = [node_fail, node_fail, Outcome()]
    launcher = ScriptedLauncher(script, queues_arrays=arrays)
    results = run_sweep(tmp_path, launcher, 6, parallel=2)
    assert all(r.status == JobStatus.COMPLETED for r in results.values())
    assert sorted(launcher.submitted) == [0, 0, 1, 1, 1, 2, 3, 4, 5]
    # Each job submitted on its own (a retry; without arrays, every job) found a free slot: with
    # arrays, the scheduler's throttle does not count a job outside the array.
    assert launcher.live_before_single_submits and max(launcher.live_before_single_submits) < 2
    if not arrays:
        assert launcher.max_live <= 2


def test_a_retry_raises_the_jobs_generation_so_the_old_attempt_is_fenced_off(tmp_path):
    node_fail = Outcome(status=None, failure="node failure", returncode=1)
    launcher = ScriptedLauncher({0: [node_fail, Outcome()]})
    run_sweep(tmp_path, launcher, 1)
    job_dir = next(tmp_path.glob("jobs/*"))
    first = attempts.AttemptFence(job_dir, generation=1)
    assert not first.current()  # the first attempt, still running somewhere, may no longer write
    assert attempts.AttemptFence(job_dir, generation=attempts.current_generation(job_dir)).current()


def test_a_rerun_reattaches_to_jobs_still_live_with_the_scheduler_instead_of_submitting_them_again(tmp_path):
    jobs = planned(3)
    live_dir = job_dir_for(tmp_path, jobs[1])
    live_dir.mkdir(parents=True)
    JobResult(status="running", config_hash="h1").write(live_dir)
    launcher = ScriptedLauncher({0: [Outcome()], 2: [Outcome()]}, live_to_reattach={live_dir: Outcome()})
    results = run_sweep(tmp_path, launcher, 3, parallel=2)
    assert sorted(launcher.submitted) == [0, 2]  # job 1 was polled, not submitted again
    assert all(r.status == JobStatus.COMPLETED for r in results.values())
    assert launcher.max_live <= 2  # the reattached job took one of the two slots


def test_a_completed_job_the_scheduler_still_holds_is_cancelled_not_reattached_or_run_again(tmp_path):
    # SLURM requeued it as it ended (a requeue during its last step): its record says completed.
    jobs = planned(2)
    done = job_dir_for(tmp_path, jobs[0])
    done.mkdir(parents=True)
    JobResult(status=JobStatus.COMPLETED, config_hash="h0").write(done)
    launcher = ScriptedLauncher({1: [Outcome()]}, live_to_reattach={done: Outcome()})
    run_sweep(tmp_path, launcher, 2)
    assert launcher.submitted == [1]
    assert launcher.cancelled == [0]
    assert launcher.live_before_single_submits == [0]  # cancelled before anything else was submitted


def test_ctrl_c_stops_the_jobs_in_flight_and_records_them_as_preempted(tmp_path, monkeypatch):
    launcher = ScriptedLauncher({0: [Outcome(polls=10**9)], 1: [Outcome(polls=10**9)]})
    source = StaticSource(SimpleNamespace(jobs=planned(2)), tmp_path)
    runner = SweepRunner(source, tmp_path, launcher, 2, metric=Metric())
    calls = iter(range(100))

    def interrupt(_seconds: float) -> None:
        if next(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr("rllm_sweeps.sweep.runner.time.sleep", interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    for job_dir in tmp_path.glob("jobs/*"):
        result = JobResult.read(job_dir)
        assert result.status == JobStatus.PREEMPTED and "Ctrl-C" in result.error
    assert not launcher.live


def test_after_adopting_more_live_jobs_than_parallel_new_jobs_and_retries_wait_until_fewer_are_live(tmp_path):
    # A killed sweeper's SLURM arrays held 3 live jobs of a parallel=2 sweep (the array's throttle
    # keeps 2 of them running); the rerun submits nothing more until fewer than 2 are live.
    jobs = planned(5)
    live = {}
    for job in jobs[:3]:
        job_dir = job_dir_for(tmp_path, job)
        job_dir.mkdir(parents=True)
        live[job_dir] = Outcome(polls=2 + job.index)
    live[job_dir_for(tmp_path, jobs[0])] = Outcome(status=None, failure="node failure", returncode=1, polls=1)
    launcher = ScriptedLauncher({0: [Outcome()], 3: [Outcome()], 4: [Outcome()]}, live_to_reattach=live)
    results = run_sweep(tmp_path, launcher, 5, parallel=2)
    assert all(r.status == JobStatus.COMPLETED for r in results.values())
    assert sorted(launcher.submitted) == [0, 3, 4]  # job 0's retry, and the two never submitted
    assert max(launcher.live_before_single_submits) < 2


def test_a_jobs_retry_history_survives_a_new_sweeper(tmp_path):
    # An earlier sweeper retried job 0 once and died; the new one retries it again.
    job_dir = job_dir_for(tmp_path, planned(1)[0])
    job_dir.mkdir(parents=True)
    earlier = JobResult(status=JobStatus.FAILED, config_hash="h0", failure_kind="infrastructure", retries=1)
    earlier.retry_reasons = ["node failure (SLURM state NODE_FAIL)"]
    earlier.write(job_dir)
    node_fail = Outcome(status=None, failure="step launch failed", returncode=1)
    launcher = ScriptedLauncher({0: [node_fail, Outcome()]})
    results = run_sweep(tmp_path, launcher, 1)
    assert results[0].status == JobStatus.COMPLETED
    assert results[0].retry_reasons == ["node failure (SLURM state NODE_FAIL)", "step launch failed"]
    assert results[0].retries == 2


def test_the_progress_lines_best_on_a_tie_is_the_first_job_as_in_the_report_and_says_it_is_a_tie(tmp_path):
    runner = SweepRunner(
        StaticSource(SimpleNamespace(jobs=[]), tmp_path), tmp_path, ScriptedLauncher({}), 1, metric=Metric()
    )
    runner.results = {i: JobResult(JobStatus.COMPLETED, f"h{i}", final={"val_reward_mean": 0.0}) for i in range(3)}
    assert runner.best() == "  best val_reward_mean=0 (job 0; a tie with 2 others)"
    runner.results[2].final["val_reward_mean"] = 0.5
    assert runner.best() == "  best val_reward_mean=0.5 (job 2)"


def test_the_progress_line_shows_each_running_jobs_step_and_an_eta_before_any_job_ends(tmp_path, capsys):
    from rllm_sweeps.records.metric_rows import TrainRow
    from rllm_sweeps.records.metrics import MetricsLog
    from rllm_sweeps.sweep.runner import JobToRun, _Running

    jobs = planned(3)
    runner = SweepRunner(
        StaticSource(SimpleNamespace(jobs=jobs[2:]), tmp_path), tmp_path, ScriptedLauncher({}), 2, metric=Metric()
    )
    for job, step in ((jobs[0], 3), (jobs[1], 6)):
        run = JobToRun(job, job_dir_for(tmp_path, job))
        run.job_dir.mkdir(parents=True)
        log = MetricsLog(run.job_dir)
        log.append(TrainRow(time=0.0, total_steps=30, step=step, reward_mean=0.1))
        log.close()
        runner.running[job.index] = _Running(run, None, time.monotonic() - 60)  # 60 s in
    runner.print_progress()
    line = capsys.readouterr().out
    assert "2 in flight (job 0 step 3/30, job 1 step 6/30), 1 to come" in line
    # Foretold: 600 s and 300 s a job, 450 s on average; 3 jobs' worth over 2 slots.
    assert "ETA 0:11:1" in line, line
