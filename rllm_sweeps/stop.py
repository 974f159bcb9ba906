"""How a command ends early: `Stop(code, message)`, raised anywhere below an entry point and turned
into the process's exit there alone (the sweeper's `sweep`, the training app's `run`).

    raise Stop(EXIT_BAD_INPUT, "error: hydra.sweeper.parallel=0 is invalid: ...")

A `BaseException`, as `SystemExit` is: Hydra's `run_and_report` and every `except Exception` let
it through to the entry point, exactly as they did the `SystemExit` it replaces.
"""

from __future__ import annotations

import sys

EXIT_FAILED = 1  # a job (or the job itself) did not complete
EXIT_BAD_INPUT = 2  # nothing ran: a config, a sweep, a launcher or a directory refused
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


class Stop(BaseException):
    """End the process with exit `code`, after `message` (one or more lines; "" for none) on stderr."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def report(self) -> int:
        """Print the message where users see it; the exit code for the entry point to end with."""
        if self.message:
            print(self.message, file=sys.stderr)
        return self.code
