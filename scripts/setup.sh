#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package cardiac's build, tests and benchmarks need, then builds the
# Release tree in ./build. Idempotent: safe to run again. Run as root (or with sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libfmt-dev libspdlog-dev nlohmann-json3-dev libtomlplusplus-dev libexpected-dev libcli11-dev
  libsqlite3-dev libcpp-httplib-dev zlib1g-dev liblzma-dev libzstd-dev libbrotli-dev libdeflate-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang clang-format clang-tidy-22 hyperfine
  clang-16 libclang-rt-16-dev llvm-16
  prometheus prometheus-alertmanager prometheus-node-exporter curl
  slurmctld slurmd slurm-client munge
  help2man dpkg-dev systemd procps
  chromium
  libncurses-dev tmux
)
# Node and npm for the dashboard (web/): Debian's, unless a node with its own npm is installed
# already (NodeSource's nodejs provides npm and conflicts with Debian's package).
if ! command -v npm >/dev/null 2>&1; then PACKAGES+=(nodejs npm); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # Prometheus, Alertmanager and Slurm (munged, slurmctld, slurmd) are for the tests, which
  # start their own copies on loopback:
  # keep the packages from starting system services while they install.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod +x "$policy"
    created_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  if [ "$created_policy" = 1 ]; then $SUDO rm -f "$policy"; fi
else
  echo "setup: all packages present"
fi

# The dashboard's npm packages (web/package-lock.json): uPlot, embedded into the binary at build
# time, and playwright-core, which drives chromium in the web test. Exactly the locked versions.
npm ci --prefix web --no-audit --no-fund

cmake --preset release
cmake --build --preset release
echo "setup: built ./build/cardiac"
