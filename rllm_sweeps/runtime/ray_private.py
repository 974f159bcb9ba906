"""Ray's private API, in one place: what the job runtime needs that Ray has no public call for.

Pinned: ray==2.57.0. Each use says why the public API does not do; an upgrade of Ray checks these
first (tests/test_ray_cluster.py exercises both).

- :func:`client_has_token`: whether Ray's client will send a token (launchers/ray_auth.py refuses a
  sweep against a token cluster in one line rather than Ray's 401 traceback); Ray's token loader.
- :func:`gcs_client`: ``ray._raylet.GcsClient``, the client ``ray.nodes()`` and ``ray symmetric-run``
  build on. It does not make this process a Ray driver, so SkyRL's later ``ray.init()`` still works
  here (``ray.nodes()`` needs ``ray.init()`` first).
- :func:`reload_ray_config`: Ray reads ``RAY_AUTH_MODE`` into its C++ config once, when ``ray`` is
  imported, caches the token it loaded, and reads the single-machine switch into a Python constant
  (``ray_constants.ENABLE_RAY_CLUSTER``); reloaded as Ray's own tests do
  (``ray/_private/authentication_test_utils.py``).
"""

from __future__ import annotations

import sys
from typing import Any


def client_has_token() -> bool:
    """Whether Ray's client, in this process, will send a token: Ray's own loader decides (the token's
    places are Ray's: RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token), with no public call."""
    from ray._private.authentication import authentication_utils
    from ray._raylet import AuthenticationTokenLoader

    return authentication_utils.is_token_auth_enabled() and AuthenticationTokenLoader.instance().has_token()


def gcs_client(address: str) -> Any:
    """A client of the GCS at ``address`` (``get_all_node_info``; blocks ~40 s when nothing listens)."""
    from ray._raylet import GcsClient

    return GcsClient(address=address)


def reload_ray_config(loopback_env: str) -> None:
    """Ray's config read again from the environment, in a process that imported Ray already.
    Modules not imported yet read the environment when they are."""
    raylet = sys.modules.get("ray._raylet")
    if raylet is not None:
        raylet.AuthenticationTokenLoader.instance().reset_cache()
        raylet.Config.initialize("")
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:  # the same expression as in ray_constants.py
        constants.ENABLE_RAY_CLUSTER = constants.env_bool(loopback_env, not constants.IS_WINDOWS_OR_OSX)


__all__ = ["gcs_client", "reload_ray_config"]
