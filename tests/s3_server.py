"""An S3 server for the tests of sweeps on an object store: moto's (`moto[server]`, the S3 protocol over
HTTP, objects in memory), in a process of its own, reached by pyarrow's S3 client (the AWS SDK)
at the address in `AWS_ENDPOINT_URL`, as a MinIO or Ceph store is. No S3 service is reachable from CI,
and MinIO is on none of the package registries it reaches: what is tested is this project's side of
the protocol (docs/RAY.md says so).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

# Any key is accepted by the server; the clients (the sweeper, Ray's nodes) must be given one, as
# they would be on a real store (their environment, an instance role).
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "rllm-test",
    "AWS_SECRET_ACCESS_KEY": "rllm-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class S3Server:
    endpoint: str  # http://HOST:PORT

    @property
    def env(self) -> dict[str, str]:
        """What a client of this server needs in its environment: the credentials and the address."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL": self.endpoint}

    def make_bucket(self, bucket: str) -> None:
        """The user's bucket (a sweep's storage is a path in a bucket that exists)."""
        from pyarrow import fs

        options = f"endpoint_override={self.endpoint}&scheme=http&region=us-east-1&allow_bucket_creation=true"
        filesystem, _ = fs.FileSystem.from_uri(f"s3://{bucket}/?{options}")
        filesystem.create_dir(bucket)


@contextlib.contextmanager
def s3_server(host: str = "127.0.0.1") -> Iterator[S3Server]:
    """A fresh server listening on `host` (a free port) in a process of its own (moto keeps every
    in-process server's objects in one place: two stores must be two processes), stopped by its PID
    on leaving."""
    with socket.socket() as probe:  # a free port (moto's command line takes a number)
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2)
                break
            except OSError:
                assert server.poll() is None, f"moto's S3 server exited ({server.returncode})"
                assert time.monotonic() < deadline, f"moto's S3 server did not answer at {endpoint}"
                time.sleep(0.2)
        yield S3Server(endpoint)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
