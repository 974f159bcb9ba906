"""Reaching a Ray cluster that has token authentication (Ray 2.57, `RAY_AUTH_MODE=token`).

The token is the user's and Ray's own business: Ray's client (JobSubmissionClient) reads it where Ray
documents (`RAY_AUTH_TOKEN`, `RAY_AUTH_TOKEN_PATH`, `~/.ray/auth_token`, with `RAY_AUTH_MODE=token`
set for the client) and sends it as a header. This module never reads, prints or stores it; it only
asks the dashboard which mode it runs in (`/api/authentication_mode`, open without a token), so a
sweep without the token is refused with one line rather than Ray's 401 traceback, and an
unauthenticated cluster gets a one-line warning.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from rllm_sweeps.runtime.ray_private import client_has_token

TOKEN_HELP = (
    "set RAY_AUTH_MODE=token and your cluster's token in RAY_AUTH_TOKEN or a file named by RAY_AUTH_TOKEN_PATH "
    "(or ~/.ray/auth_token), as for `ray job submit` (docs/RAY.md)"
)


def cluster_auth_mode(address: str, timeout: float = 10) -> str | None:
    """The dashboard's authentication mode ("token", "disabled"), None where it does not say."""
    try:
        with urllib.request.urlopen(address.rstrip("/") + "/api/authentication_mode", timeout=timeout) as answer:
            return str(json.load(answer).get("authentication_mode"))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def auth_refusal(address: str) -> str | None:
    """One line where the cluster wants a token this process would not send; None otherwise."""
    if cluster_auth_mode(address) == "token" and not client_has_token():
        return f"the Ray cluster at {address} requires token authentication and no token was found: {TOKEN_HELP}"
    return None


def unauthenticated_warning(address: str) -> str | None:
    """One line where the cluster runs without authentication: anyone reaching it may run code."""
    if cluster_auth_mode(address) == "disabled":
        return (
            f"the Ray cluster at {address} has no authentication: anyone who reaches its dashboard can run "
            "jobs on it (start it with RAY_AUTH_MODE=token; docs/RAY.md)"
        )
    return None
