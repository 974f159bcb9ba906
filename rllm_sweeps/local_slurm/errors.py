"""The one error the local cluster raises."""


class LocalSlurmError(RuntimeError):
    """Bring-up, health check or tear-down of the local cluster failed."""
