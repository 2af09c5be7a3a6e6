#!/bin/sh
# make install, Python part: the `ibqos` command in a private environment, PREFIX/lib/ibqos (a
# venv of the system's python3, so nothing is added to Debian's Python), holding exactly the
# runtime lock's wheels (hash-checked, offline from the wheelhouse `make deps` downloaded) and
# the ibqos packages; _layout.json tells them where CMake installed the plugin, the tools and
# the templates; BINDIR/ibqos runs that environment's interpreter.
#
# With DESTDIR the environment is built in the staging tree but must work at its final path:
# a venv's absolute paths are its interpreter (/usr/bin/python3.X: the same in both), its bin/
# scripts' shebangs (removed: the launcher is the one entry point), pyvenv.cfg's `command`
# (rewritten) and the source paths compiled into the .pyc files (compiled for the final path).
# Usage: install-python.sh PIP DESTDIR PREFIX LAYOUT_JSON WHEELHOUSE LOCK
set -eu
pip=$1 destdir=$2 prefix=$3 layout=$4 wheelhouse=$5 lock=$6
# absolute: the .pyc files are compiled with the staging prefix stripped from their paths
[ -z "$destdir" ] || destdir=$(realpath -m "$destdir")
bindir=$(sed -n 's/.*"bindir": "\([^"]*\)".*/\1/p' "$layout")
home="$prefix/lib/ibqos"
stage="$destdir$home"
# Debian's interpreter by its versioned name: the wheels are built for its ABI, and a later
# python3 of another minor version must not pick up this environment's site-packages.
python=$(readlink -f "${IBQOS_SYSTEM_PYTHON:-/usr/bin/python3}")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The ibqos wheel, Python only (wheel.cmake=false: CMake has installed the simulator core and
# the templates where _layout.json says), from a copy of the sources, with the venv's backend.
cp -r pyproject.toml README.md manager ci-sim testbed "$tmp"/
find "$tmp" -name __pycache__ -prune -exec rm -rf {} +
"$pip" wheel -q --no-deps --no-build-isolation --config-settings wheel.cmake=false -w "$tmp/dist" "$tmp" >/dev/null

rm -rf "$stage"
"$python" -m venv --without-pip "$stage"
# pip from the build venv, running under the new environment's interpreter (--python)
"$pip" --python "$stage/bin/python" install -q --no-compile --no-index --find-links "$wheelhouse" \
	--require-hashes -r "$lock"
"$pip" --python "$stage/bin/python" install -q --no-compile --no-index --no-deps "$tmp"/dist/ibqos-*.whl

find "$stage/bin" -mindepth 1 ! -name 'python*' -exec rm -f {} +
sed -i "s|^command = .*|command = $python -m venv $home|" "$stage/pyvenv.cfg"
site=$(echo "$stage"/lib/python3*/site-packages)
cp "$layout" "$site/ibqos/_layout.json"
# checked-hash: a package build clamps the files' mtimes (SOURCE_DATE_EPOCH), which would make
# timestamp-checked .pyc files stale on the host (recompiled at every start, never written)
compile="$python -m compileall -q -j 0 --invalidation-mode checked-hash"
if [ -n "$destdir" ]; then
	$compile -s "$destdir" -p / "$stage/lib"
else
	$compile "$stage/lib"
fi

mkdir -p "$destdir$bindir"
cat >"$destdir$bindir/ibqos" <<PY
#!$home/bin/python -I
# ibqos from its private environment ($home): the locked dependencies, not the system's.
import sys

from ibqos_app.cli import main

sys.exit(main())
PY
chmod 755 "$destdir$bindir/ibqos"
echo "installed ibqos in $stage (launcher $destdir$bindir/ibqos)"
