#!/usr/bin/env bash
# Builds the Dockerfile with buildah and runs the image against a throwaway
# ZooKeeper: its entrypoint with compose.yaml's command, /healthz, a watched
# lock and a simulator step over HTTP (scripts/imagecheck/image_test.go).
#
# The base images cannot be pulled on these machines, so local stand-ins are
# built and tagged with the names the Dockerfile uses: for the build stage a
# Debian rootfs from debootstrap with the host's Go toolchain (/usr/local/go)
# copied in, for the runtime stage a minimal image with distroless's nonroot
# user (65532). Needs root, buildah, debootstrap, Go and a ZooKeeper for
# zklocal (make deps-zookeeper).
#
# The debootstrap rootfs is cached as a tarball (ZKLOCKVIZ_IMAGE_CACHE,
# default ~/.cache/zklockviz/image-check; delete it to refresh): it only
# depends on the suite and mirror, and is written under a temporary name
# first, so an interrupted run never leaves half of one. Everything buildah
# stores lives in a temporary directory removed on exit.
#
# Measured on a shared 2-core machine (load 4-7), fully cold (no rootfs
# cache, empty Go build cache): 4m38s, of which debootstrap 72s, the
# stand-ins 25s, the image build 101s (compiling) and the image test 72s,
# nearly all compiling the test itself, which CI's `make test` has already
# built: about 3.5 minutes after it, so .ci/run runs it last. Under heavy
# load debootstrap alone took nearly 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
step() { printf 'image-check: [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
die() { echo "image-check: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (buildah with vfs storage and chroot isolation)"
for tool in buildah debootstrap go python3; do
  command -v "$tool" >/dev/null || die "$tool is missing (make deps-image installs buildah and debootstrap)"
done
goroot=$(go env GOROOT)

# The names the stand-ins must carry, read from the Dockerfile so they cannot
# drift from it.
mapfile -t bases < <(sed -n 's/^FROM[[:space:]]\{1,\}\([^[:space:]]\{1,\}\).*/\1/p' Dockerfile)
[ ${#bases[@]} = 2 ] || die "expected two FROM lines in Dockerfile, found: ${bases[*]}"
build_base=${bases[0]} runtime_base=${bases[1]}
# compose.yaml's command for zklockviz, a one-line JSON-style list.
compose_cmd=$(sed -n 's/^[[:space:]]*command:[[:space:]]*\(\[.*\]\)[[:space:]]*$/\1/p' compose.yaml)
python3 -c 'import json, sys; c = json.loads(sys.argv[1]); assert isinstance(c, list) and c' "$compose_cmd" 2>/dev/null ||
  die "compose.yaml: want the zklockviz service's command as a one-line list, found: ${compose_cmd:-nothing}"

# Debian 12, like both real base images (golang:1.26 is bookworm,
# distroless static-debian12). ca-certificates: go mod download uses https.
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${ZKLOCKVIZ_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/zklockviz/image-check}
rootfs=$cache/debian-$suite-minbase-$(dpkg --print-architecture).tar
mkdir -p "$cache"

work=$(mktemp -d /var/tmp/zklockviz-image-check.XXXXXX)
B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  "${B[@]}" rm --all >/dev/null 2>&1 || true
  rm -f "$rootfs.tmp.$$"
  # Never follow a mount that a killed buildah run left behind.
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

if [ ! -s "$rootfs" ]; then
  step "debootstrap $suite (minbase) from $mirror, cached in $rootfs"
  debootstrap --variant=minbase --include=ca-certificates "$suite" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  tar --numeric-owner -C "$work/rootfs" -cf "$rootfs.tmp.$$" .
  mv "$rootfs.tmp.$$" "$rootfs"
  rm -rf --one-file-system "$work/rootfs"
else
  step "using the cached Debian rootfs $rootfs"
fi

# new_image NAME: commits whatever the function given as $2 puts into an
# empty container's root (passed as $1 to it) as NAME.
new_image() {
  local name=$1 fill=$2 ctr mnt
  ctr=$("${B[@]}" from scratch)
  mnt=$("${B[@]}" mount "$ctr")
  "$fill" "$mnt" "$ctr"
  "${B[@]}" umount "$ctr" >/dev/null
  "${B[@]}" commit --quiet "$ctr" "$name" >/dev/null
  "${B[@]}" rm "$ctr" >/dev/null
}

# The build stage's golang image: Debian, Go in /usr/local/go, GOPATH /go,
# GOTOOLCHAIN=local, as the official image sets them.
fill_golang() {
  local mnt=$1 ctr=$2
  tar --numeric-owner -C "$mnt" -xf "$rootfs"
  mkdir -p "$mnt/usr/local" "$mnt/go/bin" "$mnt/go/src"
  cp -a "$goroot" "$mnt/usr/local/go"
  # The host's CA bundle: where egress goes through a TLS proxy with a CA
  # of its own (as on these machines), Debian's bundle alone fails
  # go mod download with "certificate signed by unknown authority".
  cp /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/ca-certificates.crt"
  "${B[@]}" config --workingdir /go --cmd bash \
    --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env GOPATH=/go --env GOTOOLCHAIN=local "$ctr"
}

# distroless's static:nonroot, as far as the binary can tell: no shell, the
# CA bundle, /tmp, and the users root, nobody and nonroot (65532), the
# last being the default.
fill_distroless() {
  local mnt=$1 ctr=$2
  mkdir -p "$mnt/etc/ssl/certs" "$mnt/tmp" "$mnt/home/nonroot" "$mnt/root"
  chmod 1777 "$mnt/tmp"
  chmod 0700 "$mnt/root"
  chown 65532:65532 "$mnt/home/nonroot"
  cat >"$mnt/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$mnt/etc/group" <<'EOF'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
EOF
  tar -xOf "$rootfs" ./etc/ssl/certs/ca-certificates.crt >"$mnt/etc/ssl/certs/ca-certificates.crt"
  "${B[@]}" config --user 65532 --workingdir /home/nonroot \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt "$ctr"
}

step "stand-in $build_base (Debian $suite + $(go env GOVERSION))"
new_image "$build_base" fill_golang
step "stand-in $runtime_base"
new_image "$runtime_base" fill_distroless

image=localhost/zklockviz:image-check
# The host's Go caches, as BuildKit cache mounts would be: the module cache
# stands in for the module proxy (go test filled it), and the build cache
# makes a second check quick. Go's caches are safe to share between
# concurrent builds.
modcache=$(go env GOMODCACHE) gocache=$(go env GOCACHE)
revision=$(git rev-parse HEAD) revtime=$(git log -1 --format=%cI)
mkdir -p "$modcache" "$gocache"
step "buildah build (chroot isolation, vfs; Go caches $modcache, $gocache)"
"${B[@]}" build --isolation chroot --pull=never --layers=false \
  --volume "$modcache:/go/pkg/mod" --volume "$gocache:/root/.cache/go-build" \
  --build-arg VERSION=image-check --build-arg REVISION="$revision" --build-arg REVTIME="$revtime" \
  -t "$image" . >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; die "buildah build failed"; }

# The image's own settings, from its OCI config.
"${B[@]}" inspect --type image "$image" >"$work/inspect.json"
config() { python3 -c 'import json, sys; print(eval(sys.argv[2], {"json": json, "c": json.load(open(sys.argv[1]))["OCIv1"]["config"]}))' "$work/inspect.json" "$1"; }
user=$(config 'c.get("User", "")')
case $user in
  "" | root | 0 | root:* | 0:*) die "the image runs as ${user:-root}: want a non-root user" ;;
esac
entrypoint=$(config 'json.dumps(c.get("Entrypoint") or [])')
[ "$entrypoint" != "[]" ] || die "the image has no ENTRYPOINT"
cmd=$(config 'json.dumps(c.get("Cmd") or [])')
addr=$(config 'next((e.split("=", 1)[1] for e in c.get("Env", []) if e.startswith("ZKLOCKVIZ_ADDR=")), "")')
[ -n "$addr" ] || die "the image sets no ZKLOCKVIZ_ADDR"
# compose publishes a container port: the one the image listens on and
# exposes.
published=$(sed -n 's/^[[:space:]]*-[[:space:]]*"\{0,1\}\([0-9.]*:\)\{0,1\}[0-9]*:\([0-9]*\)"\{0,1\}[[:space:]]*$/\2/p' compose.yaml)
exposed=$(config '" ".join(p.split("/")[0] for p in (c.get("ExposedPorts") or {}))')
[ "$published" = "${addr##*:}" ] && [ "$exposed" = "$published" ] ||
  die "compose.yaml publishes container port ${published:-none}; the image listens on ${addr##*:} (ZKLOCKVIZ_ADDR) and exposes ${exposed:-none}"

ctr=$("${B[@]}" from "$image")
# buildah run with chroot isolation shares the host's network, where the
# image's port may be taken: keep its host, pick a free port, as
# `docker run -e ZKLOCKVIZ_ADDR=...` would.
"${B[@]}" config --env "ZKLOCKVIZ_ADDR=${addr%:*}:0" "$ctr"

# `docker run IMAGE` alone: the entrypoint with the image's CMD.
mapfile -t default_run < <(python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1]) + json.loads(sys.argv[2])))' "$entrypoint" "$cmd")
step "run ${default_run[*]}"
"${B[@]}" run --isolation chroot "$ctr" -- "${default_run[@]}" >"$work/default.out" 2>&1 ||
  { cat "$work/default.out" >&2; die "${default_run[*]} failed"; }
grep -q "zklockviz serve" "$work/default.out" || { cat "$work/default.out" >&2; die "${default_run[*]} printed no help"; }

# The image says which build it is: the version and commit it was given.
step "run ${default_run[0]} version"
"${B[@]}" run --isolation chroot "$ctr" -- "${default_run[0]}" version >"$work/version.out" 2>&1 ||
  { cat "$work/version.out" >&2; die "version failed"; }
grep -q "image-check" "$work/version.out" && grep -q "$revision" "$work/version.out" ||
  { cat "$work/version.out" >&2; die "the image's version does not name the build's version and commit $revision"; }

json() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }
run=$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1]) + json.loads(sys.argv[2])))' \
  "$(json "${B[@]}" run --isolation chroot "$ctr" --)" "$entrypoint")

step "run $entrypoint as $user with compose's command: $compose_cmd"
ZKLOCKVIZ_IMAGE_RUN=$run ZKLOCKVIZ_IMAGE_COMMAND=$compose_cmd \
  go test -count=1 -run '^TestImage$' -v ./scripts/imagecheck/
step "passed"
