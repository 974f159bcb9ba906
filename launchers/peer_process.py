"""What the warm server knows of the command that asks it for a job: the caller's umask and
credentials, read from /proc/<pid>/status (Linux; the pid from the socket's SO_PEERCRED).

A job forked from the server runs with the caller's umask (so its files get the modes a cold job's
get) and is refused where the caller's credentials (user, groups, capabilities) differ from the
server's: a fork would carry the server's, and write where the caller may not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# /proc/<pid>/status fields a forked job would take from the server rather than from its caller.
CREDENTIALS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")


@dataclass(frozen=True)
class ProcessStatus:
    umask: int | None  # None: a kernel without the Umask field
    credentials: dict[str, str]

    @classmethod
    def of(cls, pid: int) -> ProcessStatus | None:
        """The process's umask and credentials; None where /proc cannot say (it exited, another OS)."""
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        fields = {k.strip(): " ".join(v.split()) for k, v in fields.items()}
        umask = int(fields["Umask"], 8) if "Umask" in fields else None
        return cls(umask, {k: fields[k] for k in CREDENTIALS if k in fields})

    def differences(self, other: ProcessStatus) -> list[str]:
        """The credentials in which this process differs from `other`."""
        return [k for k in CREDENTIALS if self.credentials.get(k) != other.credentials.get(k)]


__all__ = ["CREDENTIALS", "ProcessStatus"]
