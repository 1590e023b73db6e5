# zklockviz. `make demo` to try it, `make test` to check it (what CI runs).

SHELL   := /bin/bash
GO      ?= go
ADDR    ?= 127.0.0.1:8080
BIN     := bin/zklockviz
# Where `make install` puts zklockviz (with sudo unless root or writable).
BINDIR  ?= /usr/local/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit, its time and whether the tree has changes, stamped for builds
# whose build info records no VCS facts (a git worktree, -buildvcs=false);
# where it does, `zklockviz version` prefers the build info's.
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
REVTIME  := $(shell git log -1 --format=%cI 2>/dev/null)
MODIFIED := $(shell git rev-parse HEAD >/dev/null 2>&1 && { [ -z "$$(git status --porcelain 2>/dev/null)" ] && echo false || echo true; })
LDFLAGS  := -X main.version=$(VERSION) -X main.revision=$(REVISION) -X main.revisionTime=$(REVTIME) -X main.modified=$(MODIFIED)
# sudo only when not root (containers, CI runners).
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT     := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get

# Go files that are ours (./tmp is scratch space, ignored by git).
GOFILES  = $(shell find . -name '*.go' -not -path './tmp/*' -not -path './.git/*')

# How much `make fuzz` runs each fuzz target (CI runs it after the tests).
# Counts, not durations: go1.26's fuzz coordinator can fail a duration run
# at its deadline with a bare "context deadline exceeded" and no crasher
# (golang/go#75804, fixed in go1.27; it failed stop 22's CI). Each count is
# about 20 s of fuzzing on a quiet CI machine, as the targets' speeds differ
# 200-fold. `make fuzz FUZZTIME=60s` still runs every target for a duration.
FUZZTIME ?=
FUZZ_BUDGETS = FuzzParseName=500000x FuzzPrefixMatchers=500000x FuzzParseScenario=100000x \
	FuzzAPI=10000x FuzzDeltaRoundTrip=6000x

.PHONY: all build install dist dist-check generate test check fuzz vet bench deps deps-zookeeper deps-image image-check goinstall-check demo clean

all: build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/zklockviz

# Release binaries: static (no cgo, so no libc to match), stripped,
# stamped like `make build`, one per platform, named
# zklockviz-VERSION-OS-ARCH, with their SHA-256 sums in SHA256SUMS
# (`sha256sum -c SHA256SUMS` checks a download). `make dist-check` builds
# and checks them; CI runs it after the tests, as the four cross builds take
# minutes on these machines (scripts/dist-check.sh).
DIST           ?= dist
DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
dist:
	@set -e; rm -rf $(DIST); mkdir -p $(DIST); \
	for p in $(DIST_PLATFORMS); do \
		out=$(DIST)/zklockviz-$(VERSION)-$${p%/*}-$${p#*/}; \
		echo "build $$out"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $$out ./cmd/zklockviz; \
	done; \
	cd $(DIST) && sha256sum zklockviz-* >SHA256SUMS
	@echo "wrote $(DIST)/SHA256SUMS"

dist-check:
	./scripts/dist-check.sh

# The README's examples call plain `zklockviz`: this puts it on PATH.
install: build
	@if [ -w "$(BINDIR)" ] || [ -z "$(SUDO)" ]; then \
		install -D -m 0755 $(BIN) $(BINDIR)/zklockviz; \
	else \
		$(SUDO) install -D -m 0755 $(BIN) $(BINDIR)/zklockviz; \
	fi
	@echo "installed $(BINDIR)/zklockviz"

# Regenerate templ's *_templ.go and lockqueue's fields_gen.go (both
# committed) and format the templates.
generate:
	$(GO) tool templ generate
	$(GO) generate ./lockqueue
	$(GO) tool templ fmt .

demo: deps-zookeeper build
	./$(BIN) demo --addr $(ADDR)

# The one check, here and in CI: install what is missing, fail if generated
# code (templ's, lockqueue's fields) or template formatting drifted from
# what is committed, vet, test, then fuzz every fuzz target for its budget (below).
test: check fuzz

check: deps
	@before=$$(find . -name '*_templ.go' -not -path './tmp/*' | sort | xargs -r sha256sum); \
	$(GO) tool templ generate >/dev/null || exit 1; \
	after=$$(find . -name '*_templ.go' -not -path './tmp/*' | sort | xargs -r sha256sum); \
	if [ "$$before" != "$$after" ]; then \
		echo "generated templ code was stale: run 'make generate' and commit the result"; \
		diff <(echo "$$before") <(echo "$$after"); exit 1; \
	fi
	$(GO) tool templ fmt -fail .
	@before=$$(sha256sum lockqueue/fields_gen.go); \
	$(GO) generate ./lockqueue || exit 1; \
	if [ "$$before" != "$$(sha256sum lockqueue/fields_gen.go)" ]; then \
		echo "lockqueue/fields_gen.go was stale: run 'go generate ./lockqueue' and commit the result"; \
		git diff --stat -- lockqueue/fields_gen.go; exit 1; \
	fi
	@unformatted=$$(gofmt -l $(GOFILES)); \
	if [ -n "$$unformatted" ]; then echo "not gofmt-ed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

# Every Fuzz function in the module, each for its budget or FUZZTIME (go
# test -fuzz takes one target at a time). The seed corpora already ran in
# `go test ./...`. A target with no budget above fails here, so none is
# fuzzed for a guessed count.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			budget="$(FUZZTIME)"; \
			for kv in $(FUZZ_BUDGETS); do \
				if [ -z "$(FUZZTIME)" ] && [ "$${kv%%=*}" = "$$f" ]; then budget="$${kv#*=}"; fi; \
			done; \
			if [ -z "$$budget" ]; then echo "$$f has no budget in the Makefile's FUZZ_BUDGETS"; exit 1; fi; \
			echo "fuzz $$pkg $$f for $$budget"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $$budget $$pkg; \
		done; \
	done

vet:
	$(GO) vet ./...

# Benchmarks run against real ZooKeeper servers; the herd drain of 500
# clients alone takes minutes, hence -benchtime 1x and the long timeout.
# `make bench BENCH=Drain` runs one.
BENCH ?= .
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime 1x -benchmem -timeout 60m ./...

# Install the distribution packages the tests use, only those missing, each
# detected by a file it installs: ZooKeeper, Redis, etcd and PostgreSQL to run
# real servers (etcdctl as a real etcd client), kazoo and Curator for real
# clients of other recipes, Chromium for the browser tests, libfaketime for a
# ZooKeeper whose clock is skewed, promtool (Debian's prometheus package) to
# check and unit-test the shipped alerting rules.
deps:
	@need=(); \
	[ -e /usr/share/java/zookeeper.jar ] || need+=(zookeeper); \
	[ -x /usr/bin/redis-server ] || need+=(redis-server); \
	[ -x /usr/bin/etcd ] || need+=(etcd-server); \
	[ -x /usr/bin/etcdctl ] || need+=(etcd-client); \
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql); \
	/usr/bin/python3 -c 'import kazoo' 2>/dev/null || need+=(python3-kazoo); \
	[ -e /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java); \
	[ -x /usr/bin/chromium ] || need+=(chromium); \
	[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need+=(faketime); \
	[ -x /usr/bin/promtool ] || need+=(prometheus); \
	if [ $${#need[@]} -gt 0 ]; then \
		echo "installing $${need[*]}"; \
		$(APT) update && $(APT) install -y "$${need[@]}"; \
	fi
	@# TestDeployManifests builds deploy/'s setups with kustomize (kubectl's
	@# own, or the binary, from the module proxy: Debian has none recent).
	@command -v kubectl >/dev/null || command -v kustomize >/dev/null || [ -x "$$($(GO) env GOPATH)/bin/kustomize" ] || \
		{ echo "installing kustomize"; $(GO) install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1; }

# The demo needs only ZooKeeper.
deps-zookeeper:
	@if [ ! -e /usr/share/java/zookeeper.jar ] && [ -z "$$ZOOKEEPER_HOME" ]; then \
		echo "installing zookeeper"; \
		$(APT) update && $(APT) install -y zookeeper; \
	fi

# Build the Dockerfile with buildah, with local stand-ins for its base
# images, and run the image against a throwaway ZooKeeper: /healthz, a
# watched lock and a simulator step over HTTP, with compose.yaml's command.
# Root only (buildah: vfs storage, chroot isolation). Not part of `make
# test`; .ci/run runs it after (about 3.5 minutes more on 2 cores, see
# scripts/image-check.sh).
image-check: deps-zookeeper deps-image
	./scripts/image-check.sh

# `go install github.com/zklockviz/zklockviz/cmd/zklockviz@VERSION` from a
# module proxy directory built from this checkout, in an empty GOPATH, then
# the installed binary's `version` (scripts/goinstall-check.sh). Not part of
# `make test`: the empty GOPATH downloads every dependency again, 1 to 5
# minutes on these machines (load 2 to 12); .ci/run runs it after the tests.
goinstall-check:
	./scripts/goinstall-check.sh

deps-image:
	@need=(); \
	command -v buildah >/dev/null || need+=(buildah); \
	command -v debootstrap >/dev/null || need+=(debootstrap); \
	if [ $${#need[@]} -gt 0 ]; then \
		echo "installing $${need[*]}"; \
		$(APT) update && $(APT) install -y "$${need[@]}"; \
	fi

clean:
	rm -rf bin $(DIST)
