#!/usr/bin/env bash
# Builds the table-file fuzzer with clang (libFuzzer + ASan/UBSan) and runs it for a fixed
# number of executions: `run.sh RUNS [BUILD_DIR]`. The committed seeds and past findings are
# the read-only corpus; new inputs go to a temporary one. Exit 0 only if nothing crashed, hung
# (-timeout) or ran out of memory (-rss_limit_mb); a finding is saved under BUILD_DIR/findings.
set -euo pipefail
runs=${1:?usage: run.sh RUNS [BUILD_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
build=${2:-$repo/build/fuzz}
clang=$(command -v clang || true)
if [ -z "$clang" ]; then
  echo "fuzz: error: clang is missing (apt-get install clang)" >&2
  exit 2
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$build" -DCMAKE_C_COMPILER="$clang" -DIBQOS_FUZZ=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" --target fuzz_tables -j 2 >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/ibqos-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/findings"
set +e
"$build/plugin/fuzz_tables" -runs="$runs" -max_len=8192 -timeout=10 -rss_limit_mb=1024 \
  -print_final_stats=1 -dict="$here/tables.dict" -artifact_prefix="$build/findings/" \
  "$work" "$here/seeds" "$here/regressions" >"$work/log" 2>&1
rc=$?
set -e
grep -E "^Done|stat::number_of_executed_units|stat::peak_rss_mb" "$work/log" || true
if [ $rc -ne 0 ]; then
  grep -E "ERROR|SUMMARY|Test unit written" "$work/log" >&2 || tail -20 "$work/log" >&2
  echo "fuzz: error: fuzz_tables exited with $rc; reproducer in $build/findings/" >&2
  exit 1
fi
echo "fuzz: $runs executions, 0 crashes, 0 hangs, 0 out-of-memory"
