#!/usr/bin/env bash
# Installs the Debian packages ibqos builds and runs against, only those missing,
# so `make deps` is idempotent and fast on a machine that already has them.
set -euo pipefail

# clang alone (installed without recommends) has no compiler-rt: libFuzzer and clang's ASan
# runtime for the table fuzzer in make test are in libclang-rt-14-dev.
PKGS=(
  opensm libopensm-dev ibsim-utils libumad2sim0 infiniband-diags perftest ibutils
  libibumad-dev libibmad-dev
  dpkg-dev patch   # the patched ibsim: dpkg-source unpacks Debian's source, patch applies ours
  debhelper debootstrap   # make deb, and a fresh Debian 12 root to apt install it in (plugin/tests/test_deb.py)
  cmake gcc clang libclang-rt-14-dev clang-format make pkg-config python3 python3-venv python3-dev valgrind
  chromium
  slurm-wlm munge
  prometheus   # promtool: make test checks the alerting rules ibqos monitor writes
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "ibqos: error: missing Debian packages: ${missing[*]} (run 'make deps' as root, or apt-get install them)" >&2
  exit 1
fi
echo "ibqos: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# slurm-wlm and munge are here for the tests' own single-host Slurm (ci-sim/tests/slurmcluster.py),
# which runs its daemons with its own config, sockets and ports: keep the packages' postinst
# from starting the system's munge/slurmctld/slurmd services while apt installs them.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\n# ibqos install-deps.sh: no service starts during this install\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/ibqos-apt.log 2>&1; then
  echo "ibqos: error: apt-get could not install: ${missing[*]} (log: /tmp/ibqos-apt.log)" >&2
  exit 1
fi
