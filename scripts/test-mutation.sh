#!/bin/sh
# make test-mutation: mutmut over ibqos.arbiter, ibqos.planner and ibqos.verify with their fast
# unit tests (pyproject.toml, [tool.mutmut]), one test process at a time; prints the score.
# mutmut only looks for sources under src/, so it runs in build/mutation/, where src/ is
# manager/ and every other name it copies points back to this checkout.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$ROOT/.venv}
WORK=$ROOT/build/mutation
rm -rf "$WORK"
mkdir -p "$WORK"
ln -s "$ROOT/manager" "$WORK/src"
for name in pyproject.toml conftest.py README.md manager examples docs templates; do
	ln -s "$ROOT/$name" "$WORK/$name"
done
cd "$WORK"
# mutmut exits 0 with survivors; the score is the report, not a gate
# The editable install maps `ibqos` to manager/ through an import hook that would win over
# mutmut's mutants/src on sys.path: mutmut runs without it (ci-sim/ and testbed/ stay on
# sys.path through the same .pth file).
"$VENV/bin/python" - run --max-children 1 >mutmut-run.log 2>&1 <<'PY' || { tail -n 40 mutmut-run.log; exit 1; }
import sys

sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable_skbc_")]
from mutmut.__main__ import cli

cli()
PY
"$VENV/bin/mutmut" results --all true >results.txt 2>&1 || true
"$VENV/bin/mutmut" export-cicd-stats >/dev/null
"$VENV/bin/python" - <<'PY'
import json
s = json.load(open("mutants/mutmut-cicd-stats.json"))
total = s["total"]
killed = s["killed"] + s.get("timeout", 0) + s.get("segfault", 0)
print(f"mutation score: {killed}/{total} killed ({100 * killed / max(total, 1):.1f}%), "
      f"{s['survived']} survived, {s.get('no_tests', 0)} without a test, {s.get('skipped', 0)} skipped")
print("  " + ", ".join(f"{k} {v}" for k, v in sorted(s.items())))
PY
echo "survivors: build/mutation/results.txt (mutmut show NAME in build/mutation for the diff)"
