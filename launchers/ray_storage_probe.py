"""Does a job on the Ray cluster see the sweep directory's storage? Both sides through `pyarrow.fs`
(`FileSystem.from_uri`, as Ray Train's `storage_path`), so the question is the same for any storage
pyarrow opens.

The sweeper writes a question file holding a fresh nonce into the storage; a probe Ray job opens the
storage by its URI, reads the nonce and writes it back into an answer file, which the sweeper reads.
A node that sees another directory at the same path (its own disk) finds no question; one that may
not write leaves no answer. Both files are removed afterwards.

    python -m launchers.ray_storage_probe QUESTION_URI     (the probe job's entrypoint, on the cluster)
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

NOT_SEEN = 3  # the question is not there: the node sees other storage at that place
NOT_WRITABLE = 4  # the answer could not be written
NOT_REACHED = 5  # the storage did not answer (an object store the node has no address or credentials for)

REASONS = {
    NOT_SEEN: "a file the sweeper wrote there is not there for a job on the cluster (its node sees other storage "
    "at that path)",
    NOT_WRITABLE: "a job on the cluster cannot write there",
    NOT_REACHED: "the storage does not answer a job on the cluster",
}


def answer_uri(question_uri: str) -> str:
    return question_uri.removesuffix(".question") + ".answer"


def answer(question_uri: str) -> int:
    """The probe job: the question's nonce copied into the answer; NOT_SEEN or NOT_WRITABLE where not."""
    from pyarrow import fs

    try:
        filesystem, path = fs.FileSystem.from_uri(question_uri)
        with filesystem.open_input_stream(path) as question:
            nonce = question.read()
    except FileNotFoundError:
        return NOT_SEEN
    except OSError as err:  # pyarrow's S3, GCS, ... client: no route, refused, no credentials
        print(f"the storage does not answer: {err}", flush=True)
        return NOT_REACHED
    try:
        with filesystem.open_output_stream(answer_uri(path)) as out:
            out.write(nonce)
    except OSError:
        return NOT_WRITABLE
    return 0


@dataclass(frozen=True)
class Question:
    uri: str  # what the probe job is given
    nonce: bytes

    def answered(self) -> bool:
        """Whether the probe job wrote this question's nonce back (read through pyarrow.fs)."""
        from pyarrow import fs

        filesystem, path = fs.FileSystem.from_uri(answer_uri(self.uri))
        try:
            with filesystem.open_input_stream(path) as got:
                return got.read() == self.nonce
        except FileNotFoundError:
            return False


@contextlib.contextmanager
def question(directory_uri: str) -> Iterator[Question]:
    """A question file in the directory at `directory_uri`, removed (with its answer) on leaving."""
    from pyarrow import fs

    filesystem, directory = fs.FileSystem.from_uri(directory_uri)
    name = f".rllm-storage-probe-{uuid.uuid4().hex[:12]}.question"
    path = f"{directory.rstrip('/')}/{name}"
    asked = Question(f"{directory_uri.rstrip('/')}/{name}", secrets.token_hex(16).encode())
    with filesystem.open_output_stream(path) as out:
        out.write(asked.nonce)
    try:
        yield asked
    finally:
        for leftover in (path, answer_uri(path)):
            with contextlib.suppress(OSError):  # FileNotFoundError: no answer was written
                filesystem.delete_file(leftover)


if __name__ == "__main__":
    sys.exit(answer(sys.argv[1]))
