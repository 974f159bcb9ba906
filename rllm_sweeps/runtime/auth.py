"""The job's Ray token: only a holder of it may talk to the job's Ray cluster.

Ray 2.57's token authentication (``RAY_AUTH_MODE=token``) makes the GCS, the raylets, the
dashboard, the agents and the Ray Client server refuse a request that lacks the cluster's bearer
token. Every process of the cluster, and every client of it, finds the token where Ray looks for
it: ``RAY_AUTH_TOKEN_PATH``, a file. The project writes a fresh token for every attempt of a job
into the job directory (``JobPaths.ray_auth_token``), mode 0600 from its creation, and hands only
that path around: the directory is how a job's nodes find each other already (``ray.json``), and a
path in an environment variable shows nothing on a command line (``ps``) or in a log.

``RAY_AUTH_TOKEN`` (the token itself in the environment) takes precedence over the file in Ray's
loader, so it is always removed from what a node or the driver sees: one source of the token.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import stat
from pathlib import Path

from rllm_sweeps.runtime.errors import RayClusterError

# Every variable Ray's token loader reads (ray/_private/authentication, AuthenticationTokenLoader).
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
TOKEN_BYTES = 32  # 256 random bits, hex-encoded: Ray compares the whole string


@dataclasses.dataclass(frozen=True)
class RayAuth:
    """Where this attempt's token is (never the token itself: this record is printed and pickled)."""

    token_file: Path

    def env(self) -> dict[str, str]:
        """What Ray reads to run with, or to connect with, this token."""
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(self.token_file)}

    @classmethod
    def fresh(cls, token_file: Path) -> RayAuth:
        """A new random token in ``token_file`` (replacing an earlier attempt's), readable by this
        user alone. Written to a private temporary file and renamed, so no reader ever sees a
        partial token or a moment of wider permissions."""
        token_file = Path(token_file)
        token_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = token_file.with_name(f".{token_file.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask
            os.write(fd, (secrets.token_hex(TOKEN_BYTES) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, token_file)
        return cls(token_file)

    @classmethod
    def existing(cls, token_file: Path) -> RayAuth:
        """The token rank 0 wrote for this attempt (a worker node joining it): refused if it is
        missing, not a regular file of this user, or readable by anyone else."""
        token_file = Path(token_file)
        try:
            st = os.stat(token_file, follow_symlinks=False)
        except OSError as err:
            raise RayClusterError(f"no Ray token at {token_file} ({err.strerror}); rank 0 writes it first") from None
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise RayClusterError(
                f"refusing the Ray token {token_file}: it must be a regular file of uid {os.geteuid()} with mode 0600 "
                f"(it is uid {st.st_uid}, mode {stat.filemode(st.st_mode)}); remove it and rerun the job"
            )
        return cls(token_file)
