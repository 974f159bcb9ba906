"""Optuna's logging held at warnings while the project drives an in-memory study of its own (the
sweep's space samples points, a PBT trial resamples a key): its per-trial info lines say nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_optuna() -> Iterator[None]:
    import optuna

    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)
