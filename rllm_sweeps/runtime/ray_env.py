"""The environment variables Ray itself reads that a job sets, for its nodes and for itself.

- token authentication (``auth.RayAuth.env()``);
- loopback only: ``ray start --node-ip-address=127.0.0.1`` is rewritten by Ray 2.57 to the
  machine's routable address, and its servers then listen on every interface. With
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` Ray keeps a loopback node address (its single-machine
  mode: ``services.get_node_ip_address``), and every server of the node binds 127.0.0.1. Its
  clients need the same variable, or they too rewrite ``127.0.0.1:PORT`` and find nothing there.

:func:`this_process_env` applies such variables to the running process (the job's driver: its
GCS queries, SkyRL's ``ray.init``) and restores them after. Ray reads ``RAY_AUTH_MODE`` into its
C++ config once, when ``ray`` is imported, and caches the token it loaded; both are reloaded
here (through ray_private.py, Ray's private API's one home), as Ray's own tests do. The single-machine
switch is a Python constant read at import (``ray_constants.ENABLE_RAY_CLUSTER``, looked up as a
module attribute where used): it is read again the same way. So a process that imported Ray
before (a job forked from the fork server or the warm server, a test) follows the new values.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable, Iterator, Mapping

from rllm_sweeps.runtime.ray_private import reload_ray_config

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def loopback_env(node_ip: str) -> dict[str, str]:
    """What keeps a node at ``node_ip`` (and its clients) on loopback, if ``node_ip`` is loopback."""
    try:
        loopback = ipaddress.ip_address(node_ip).is_loopback
    except ValueError:  # a hostname: Ray resolves it; not ours to pin
        loopback = node_ip == "localhost"
    return {LOOPBACK_ENV: "0"} if loopback else {}


@contextlib.contextmanager
def this_process_env(values: Mapping[str, str], drop: Iterable[str] = ()) -> Iterator[None]:
    """Set ``values`` and remove ``drop`` in os.environ (and Ray's config) until exit."""
    names = {*values, *drop}
    saved = {name: os.environ.get(name) for name in names}
    for name in drop:
        os.environ.pop(name, None)
    os.environ.update(values)
    reload_ray_config(LOOPBACK_ENV)  # Ray's private API: ray_private.py
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        reload_ray_config(LOOPBACK_ENV)  # Ray's private API: ray_private.py
