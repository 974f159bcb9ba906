#!/usr/bin/env bash
# Install the Debian packages needed by rllm_sweeps/local_slurm/ (a real local
# SLURM cluster with accounting). Run as root on Debian 12 (bookworm).
# Skips quickly when everything is already installed.
set -euo pipefail

PKGS=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server iproute2 util-linux)

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install_slurm_deps: all packages already installed (${PKGS[*]})"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install_slurm_deps: must run as root to install: ${missing[*]}" >&2
    # Without them the SLURM tests skip (or fail, where RLLM_SWEEPS_REQUIRE_SLURM is set).
    [ -n "${RLLM_SWEEPS_REQUIRE_SLURM:-}" ] && exit 1 || exit 0
fi

echo "install_slurm_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${missing[@]}"
echo "install_slurm_deps: done"
