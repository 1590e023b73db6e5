#!/usr/bin/env bash
# Builds the release binaries (make dist) into a temporary directory and
# checks them: one per platform of DIST_PLATFORMS, each built for its
# GOOS/GOARCH with cgo off (static), stamped with the version, trimmed paths;
# SHA256SUMS lists exactly them and verifies; the binary for this machine's
# platform runs and says its version. `go version -m` reads each binary's
# build info, whatever its platform.
#
# Measured on a shared 2-core machine at load 10-12: 2m46s with the
# standard library and dependencies already built for each platform (the
# four links and this module's packages), 11 minutes fully cold (everything
# compiled four times over), 8 s when nothing changed since the last run.
# Hence not in `make test`: .ci/run runs it after.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
step() { printf 'dist-check: [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
die() { echo "dist-check: $*" >&2; exit 1; }

work=$(mktemp -d /var/tmp/zklockviz-dist-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
version=v0.0.0-dist-check
platforms=$(sed -n 's/^DIST_PLATFORMS *?= *//p' Makefile)
[ -n "$platforms" ] || die "no DIST_PLATFORMS in the Makefile"

step "make dist VERSION=$version DIST=$work/dist ($platforms)"
make -s dist VERSION="$version" DIST="$work/dist"

cd "$work/dist"
want=()
for p in $platforms; do want+=("zklockviz-$version-${p%/*}-${p#*/}"); done
got=$(ls | grep -v '^SHA256SUMS$' | sort)
[ "$got" = "$(printf '%s\n' "${want[@]}" | sort)" ] || die "dist holds: $got; want: ${want[*]}"
listed=$(awk '{print $2}' SHA256SUMS | sort)
[ "$listed" = "$got" ] || die "SHA256SUMS lists: $listed; want: $got"
sha256sum --quiet -c SHA256SUMS || die "SHA256SUMS does not verify"

for p in $platforms; do
  bin=zklockviz-$version-${p%/*}-${p#*/}
  info=$(go version -m "$bin") || die "$bin: go version -m: no build info"
  setting() { awk -v k="$1" '$1 == "build" { split($2, kv, "="); if (kv[1] == k) { sub(/^[^=]*=/, "", $2); print $2 } }' <<<"$info"; }
  [ "$(setting GOOS)/$(setting GOARCH)" = "$p" ] || die "$bin is built for $(setting GOOS)/$(setting GOARCH)"
  [ "$(setting CGO_ENABLED)" = 0 ] || die "$bin is built with cgo: not static"
  [ "$(setting -trimpath)" = true ] || die "$bin is built without -trimpath"
  # -trimpath keeps -ldflags out of the build info: look for the stamp itself.
  grep -qaF "$version" "$bin" || die "$bin is not stamped with $version"
  step "$bin: $p, static, stamped $version"
done

native=zklockviz-$version-$(go env GOOS)-$(go env GOARCH)
if [ -e "$native" ]; then
  if command -v file >/dev/null && [ "$(go env GOOS)" = linux ]; then
    file "$native" | grep -q "statically linked" || die "$native is not statically linked: $(file "$native")"
  fi
  out=$(./"$native" version) || die "$native version failed"
  head -1 <<<"$out" | grep -qx "zklockviz $version" || die "$native version says: $out"
  step "$native version: $(head -1 <<<"$out")"
fi
step "passed"
