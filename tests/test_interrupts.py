"""Ctrl-C on the sweeper is never lost (sweep/interrupts.py): one that a finalizer swallowed is raised
again by the runner's loop."""

from __future__ import annotations

import signal

import pytest

from rllm_sweeps.sweep import interrupts


@pytest.fixture
def sigint_restored():
    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_swallowed_where_it_landed_is_raised_again_once_by_check(sigint_restored) -> None:
    interrupts.install()
    try:  # what a finalizer does with it ("Exception ignored in ...")
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()
    interrupts.check()  # once: nothing left to raise


def test_without_a_ctrl_c_check_raises_nothing(sigint_restored) -> None:
    interrupts.install()
    interrupts.check()
