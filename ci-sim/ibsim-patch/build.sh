#!/usr/bin/env bash
# Builds ibsim from Debian 12's source package with the patches beside this script, in order
# (0001-vlarb-64-and-vlhighlimit.patch, 0002-mtucap-and-neighbor-mtu.patch,
# 0003-pma-data-per-sl.patch, 0004-pma-steady-traffic.patch,
# 0005-client-gone-while-connecting.patch, 0006-forwarded-request-timeout.patch):
#   build.sh OUTDIR
# On success OUTDIR/ibsim is the patched simulator and OUTDIR/ibsim-patched.json says what it
# was built from. When no source can be had, OUTDIR/unavailable.txt says why (one line) and the
# script exits 0: plain Debian ibsim stays the fabric, and the tests that need the patched one
# skip with that reason. Either result is kept until this script or the patch changes.
#
# The source: $IBSIM_SOURCE when set, either Debian's ibsim_0.10-2.dsc with its tarballs beside
# it (as `apt-get source --download-only` leaves them on a machine whose mirror serves them) or
# upstream's ibsim-0.10 release tarball, accepted only with the SHA-256 below (the same source
# as Debian's orig tarball; CI passes shared/vendor/ibsim-0.10.tar.gz). Else `apt-get source
# ibsim=0.10-2` through a private apt configuration under
# OUTDIR (its own deb-src list, package lists and cache: the system's apt config is not
# touched; its deb-src entries are the system's deb entries). dpkg-source (dpkg-dev) unpacks it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
patch_files=("$here"/0*.patch)
version="0.10-2"
# `git archive --prefix=ibsim-0.10/ ibsim-0.10 | gzip -n -9` of upstream's tag ibsim-0.10
upstream_sha256="59f5ba98253ca7c2a7fa166deb3e75e3c2b92cb4698d9e595a6e137ba2167688"
out="${1:?usage: build.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$out/work"
rm -rf "$work" "$out/ibsim" "$out/ibsim-patched.json" "$out/unavailable.txt"
mkdir -p "$work"

unavailable() {
	echo "$*" >"$out/unavailable.txt"
	echo "ibsim-patched: not built: $*" >&2
	exit 0
}

from_apt() {
	local apt="$out/apt"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
	# deb-src twins of the system's own deb entries (same mirrors, suites and keys)
	mkdir -p "$apt/sources.list.d"
	sed -n 's/^deb \(.*\)/deb-src \1/p' /etc/apt/sources.list >"$apt/sources.list" 2>/dev/null || true
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed 's/^Types:.*\<deb\>.*/Types: deb-src/' "$f" >"$apt/sources.list.d/$(basename "$f")"
	done
	local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o Debug::NoLocking=1
		-o APT::Sandbox::User=root -o Acquire::http::Timeout=30 -o Acquire::Retries=1 -qq)
	apt-get "${opts[@]}" update >"$work/apt.log" 2>&1 ||
		unavailable "apt-get update of the deb-src lists failed ($(tail -1 "$work/apt.log"))"
	(cd "$work" && apt-get "${opts[@]}" source --download-only "ibsim=$version") >>"$work/apt.log" 2>&1 ||
		unavailable "apt-get source ibsim=$version failed: $(grep -m1 '^E:' "$work/apt.log" || tail -1 "$work/apt.log")"
	dpkg-source -x "$work/ibsim_$version.dsc" "$work/src" >>"$work/apt.log" 2>&1 ||
		unavailable "dpkg-source -x ibsim_$version.dsc failed (see $work/apt.log)"
	origin="Debian source package ibsim $version (apt-get source)"
}

from_tarball() {
	local src="$1" sha
	sha="$(sha256sum "$src" | cut -d' ' -f1)"
	[ "$sha" = "$upstream_sha256" ] ||
		unavailable "IBSIM_SOURCE=$src has sha256 $sha, not upstream ibsim 0.10's $upstream_sha256"
	mkdir -p "$work/src"
	tar -xzf "$src" -C "$work/src" --strip-components=1 >"$work/unpack.log" 2>&1 ||
		unavailable "tar -xzf $src failed: $(tail -1 "$work/unpack.log")"
	origin="upstream ibsim 0.10 release tarball (sha256 $upstream_sha256)"
}

from_given() {
	local src="$IBSIM_SOURCE"
	case "$src" in
	*.dsc | *.tar.gz) ;;
	*) unavailable "IBSIM_SOURCE=$src is neither a Debian source package (.dsc) nor the ibsim-0.10 tarball (.tar.gz)" ;;
	esac
	[ -f "$src" ] || unavailable "IBSIM_SOURCE=$src does not exist"
	case "$src" in
	*.tar.gz)
		from_tarball "$src"
		return
		;;
	esac
	dpkg-source -x "$src" "$work/src" >"$work/unpack.log" 2>&1 ||
		unavailable "dpkg-source -x $src failed: $(tail -1 "$work/unpack.log")"
	origin="IBSIM_SOURCE=$src"
}

command -v dpkg-source >/dev/null || unavailable "dpkg-source not found (Debian package dpkg-dev; make deps)"
origin=""
if [ -n "${IBSIM_SOURCE:-}" ]; then
	from_given
else
	from_apt
fi
[ -f "$work/src/ibsim/sim_mad.c" ] || unavailable "the ibsim source has no ibsim/sim_mad.c"
grep -q 'IBSIM_VERSION "0.10"' "$work/src/ibsim/ibsim.c" ||
	unavailable "the ibsim source is not version 0.10: the patch is written against 0.10"

for patch_file in "${patch_files[@]}"; do
	(cd "$work/src" && patch -p1 --forward --quiet <"$patch_file") >"$work/patch.log" 2>&1 ||
		unavailable "$(basename "$patch_file") does not apply: $(head -1 "$work/patch.log")"
done
make -C "$work/src/ibsim" ibsim >"$work/make.log" 2>&1 ||
	unavailable "make of the patched ibsim failed: $(grep -m1 -i error "$work/make.log" || tail -1 "$work/make.log")"
cp "$work/src/ibsim/ibsim" "$out/ibsim"
patch_sha="$(cat "${patch_files[@]}" | sha256sum | cut -d' ' -f1)"
names="$(for f in "${patch_files[@]}"; do basename "$f"; done | paste -sd' ')"
printf '{"version": "%s", "source": "%s", "patch": "%s", "patch_sha256": "%s", "vlarb_cap": [64, 64], "mtu_cap": 4096}\n' \
	"0.10" "$origin" "$names" "$patch_sha" >"$out/ibsim-patched.json"
rm -rf "$work"
echo "ibsim-patched: built $out/ibsim from $origin"
