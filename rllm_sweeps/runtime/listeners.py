"""Which TCP ports a set of processes listens on, read from Linux's /proc.

A node's record (``ray.json``, ``ray-worker-K.json``) lists what its processes really listen on,
address and port, so a user can check that a job opens nothing beyond its port block and, on one
node, nothing beyond loopback. Sockets are matched to processes by inode
(``/proc/PID/fd/* -> socket:[INODE]``, ``/proc/PID/net/tcp{,6}``, which is the table of that
process's network namespace).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable
from pathlib import Path

from rllm_sweeps.records.ray_cluster import Listener  # one socket seen: address, port, process

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column


def _decode(hex_address: str) -> tuple[str, int]:
    """``0100007F:1F90`` (IPv4) or 32 hex digits + port (IPv6), each 32-bit word in host order."""
    host_hex, port_hex = hex_address.split(":")
    raw = bytes.fromhex(host_hex)
    # The kernel prints each 4-byte word as a native-endian integer.
    words = b"".join(int.from_bytes(raw[i : i + 4], "big").to_bytes(4, sys.byteorder) for i in range(0, len(raw), 4))
    family = socket.AF_INET if len(words) == 4 else socket.AF_INET6
    return socket.inet_ntop(family, words), int(port_hex, 16)


def _listening_inodes(pid: int) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN:
                found[int(fields[9])] = _decode(fields[1])
    return found


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def listening(pids: Iterable[int]) -> set[Listener]:
    """Every TCP socket in LISTEN state held by one of ``pids`` (gone processes are skipped)."""
    tables: dict[str, dict[int, tuple[str, int]]] = {}  # per network namespace
    out = set()
    for pid in pids:
        try:
            netns = os.readlink(f"/proc/{pid}/ns/net")
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if netns not in tables:
            tables[netns] = _listening_inodes(pid)
        for inode in _socket_inodes(pid) & tables[netns].keys():
            address, port = tables[netns][inode]
            out.add(Listener(address, port, comm))
    return out
