#!/usr/bin/env bash
# Proves that a new user's one-line install works (issue 38):
#
#   go install github.com/zklockviz/zklockviz/cmd/zklockviz@VERSION
#
# outside any checkout. go install refuses a module whose go.mod has a
# replace or exclude directive, and builds only what the module's zip holds,
# so this publishes the checkout (scripts/modproxy: the module's zip, .mod,
# .info and list, as `go mod download` reads them) into a proxy directory,
# then, from an empty directory with an empty GOPATH, installs @VERSION and
# @latest with GOPROXY=file://DIR,$(go env GOPROXY): zklockviz comes from
# the directory, its dependencies from the usual proxy and are checked
# against the checksum database as usual (all but zklockviz, which the
# database cannot know). Then the installed binary runs: `version` must
# name the published version, its revision and the Go version, `help` the
# commands.
#
# VERSION defaults to HEAD's pseudo-version; GOINSTALL_VERSION=v1.2.3 sets
# it. The build cache (GOCACHE) is the host's, so only the download is cold.
# Needs git, Go and network access to the module proxy.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
step() { printf 'goinstall-check: [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
die() { echo "goinstall-check: $*" >&2; exit 1; }

module=$(go list -m)
upstream=$(go env GOPROXY)
case $upstream in
  off | "") die "GOPROXY is '$upstream': the dependencies need a module proxy" ;;
esac
grep -q '^[[:space:]]*replace[[:space:](]' go.mod && die "go.mod has a replace directive: go install ...@version refuses it"
grep -q '^[[:space:]]*exclude[[:space:](]' go.mod && die "go.mod has an exclude directive: go install ...@version refuses it"

work=$(mktemp -d /var/tmp/zklockviz-goinstall.XXXXXX)
# The fresh module cache is read-only, as the go command makes it.
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

step "publish the checkout as $module into $work/proxy"
version=$(go run ./scripts/modproxy -dir "$work/proxy" -version "${GOINSTALL_VERSION:-}")
rev=$(git rev-parse HEAD)
step "version $version"

mkdir -p "$work/empty" "$work/gopath" "$work/home"
# Nothing of the host's Go set-up but the toolchain, the build cache and
# the upstream proxy. GOFLAGS=-mod=mod as a user's shell may have it (and
# not the host's -buildvcs=false); GOTOOLCHAIN=local so the go line of
# go.mod is checked against this toolchain, not downloaded.
clean_env=(env -i PATH="$PATH" HOME="$work/home" GOPATH="$work/gopath" GOCACHE="$(go env GOCACHE)"
  GOPROXY="file://$work/proxy,$upstream" GONOSUMDB="$module" GOFLAGS=-mod=mod GOTOOLCHAIN=local
  SSL_CERT_FILE="${SSL_CERT_FILE:-}" SSL_CERT_DIR="${SSL_CERT_DIR:-}"
  HTTPS_PROXY="${HTTPS_PROXY:-}" https_proxy="${https_proxy:-}" NO_PROXY="${NO_PROXY:-}" no_proxy="${no_proxy:-}")

step "go install $module/cmd/zklockviz@$version (empty GOPATH, GOPROXY=file://...,$upstream)"
(cd "$work/empty" && "${clean_env[@]}" go install "$module/cmd/zklockviz@$version") ||
  die "go install @$version failed"
bin=$work/gopath/bin/zklockviz
[ -x "$bin" ] || die "go install left no $bin"

step "$bin version"
out=$("$bin" version) || die "zklockviz version failed: $out"
echo "$out"
grep -qF "$version" <<<"$out" || die "zklockviz version does not say $version"
if [ -z "${GOINSTALL_VERSION:-}" ]; then
  # A pseudo-version carries the revision; the binary must say it.
  grep -q "^revision: ${rev:0:12}$" <<<"$out" || die "zklockviz version does not say the revision ${rev:0:12}"
fi
grep -q "^go: *$(go env GOVERSION) " <<<"$out" || die "zklockviz version does not say the Go version $(go env GOVERSION)"
"$bin" help | grep -q "zklockviz serve" || die "zklockviz help does not list serve"

step "go install $module/cmd/zklockviz@latest"
rm -f "$bin"
(cd "$work/empty" && "${clean_env[@]}" go install "$module/cmd/zklockviz@latest") ||
  die "go install @latest failed"
"$bin" version | grep -qF "$version" || die "@latest did not install $version"
step "passed"
