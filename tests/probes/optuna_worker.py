"""One of several processes sharing a journal-file study: asks trials, reports every step through
the job's reporting module (rllm_sweeps.training.trial), tells them; prints what it did as JSON.

    python -m tests.probes.optuna_worker STORAGE STUDY TRIALS STEPS START_AT
"""

from __future__ import annotations

import json
import sys
import time

import optuna

from rllm_sweeps.records.launch import OptunaTrial
from rllm_sweeps.study import SweepAttrs, TrialAddress, open_storage
from rllm_sweeps.sweep.optuna_settings import OptunaSettings, pruner_settings
from rllm_sweeps.training.trial import TrialReporter


def main(storage: str, study_name: str, trials: int, steps: int, start_at: float) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=study_name, storage=open_storage(storage))
    attrs = SweepAttrs.of_study(study.user_attrs, study.study_name)  # the pruner, as the sweeper hands it to a job
    pruner = pruner_settings(OptunaSettings(pruner=attrs.pruner, pruner_options=attrs.pruner_options))
    time.sleep(max(0.0, start_at - time.time()))  # every worker starts at once: the most contention
    done = []
    for _ in range(trials):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0.0, 1.0)})
        address = TrialAddress(storage, study_name, trial.number)
        reporter = TrialReporter(OptunaTrial.at(address, pruner), total_steps=steps + 1)
        reported = {}
        for step in range(1, steps + 1):
            value = trial.params["x"] * step
            reporter.on_validation({"step": step, "val_reward_mean": value, "val_reward_std": 0.0})
            reported[step] = value
            if reporter.pruned_at is not None:
                break
        pruned = reporter.pruned_at is not None
        study.tell(trial, state=optuna.trial.TrialState.PRUNED if pruned else None, values=None if pruned else value)
        done.append({"number": trial.number, "reported": reported, "pruned": pruned})
    print(json.dumps(done))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
