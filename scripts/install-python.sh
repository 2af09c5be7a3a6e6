#!/bin/sh
# make install, Python part: the ibqos, ibqos_sim and ibqos_testbed packages into Debian's
# dist-packages under PREFIX, an `ibqos` launcher for /usr/bin/python3, and _layout.json
# telling the package where CMake installed the plugin, the tools and the templates.
# Usage: install-python.sh PIP DESTDIR PREFIX LAYOUT_JSON (the one CMake wrote)
set -eu
pip=$1 destdir=$2 prefix=$3 layout=$4
bindir=$(sed -n 's/.*"bindir": "\([^"]*\)".*/\1/p' "$layout")
site="$destdir$prefix/lib/python3/dist-packages"

# Build from a copy of the Python sources. Python only (wheel.cmake=false): CMake has installed
# the simulator core and the templates where _layout.json says; the backend is the venv's.
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -r pyproject.toml README.md manager ci-sim testbed "$src"/
find "$src" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$site" "$destdir$bindir"
"$pip" install -q --no-deps --no-compile --upgrade --no-build-isolation -C wheel.cmake=false --target "$site" "$src"
rm -rf "$site/bin"

cp "$layout" "$site/ibqos/_layout.json"
cat > "$destdir$bindir/ibqos" <<'PY'
#!/usr/bin/python3
import sys

from ibqos.cli import main

sys.exit(main())
PY
chmod 755 "$destdir$bindir/ibqos"
echo "installed the ibqos Python packages in $site"
