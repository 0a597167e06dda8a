#!/usr/bin/env bash
# scripts/image.sh: builds the container image (Containerfile) from the
# Linux binary of a GoReleaser dist/ directory, with podman and no registry
# (the image starts FROM scratch), and writes it as a docker-archive into
# that directory. The docker format keeps the image's HEALTHCHECK, which an
# OCI image configuration has no field for; `podman load` or `docker load`
# reads it, and `podman push` sends it to a registry.
#
# podman works in a storage, configuration and temporary directory of its
# own, removed at the end: the build leaves nothing in the machine's
# container storage. It runs nothing: the Containerfile has no RUN step.
#
# Usage: scripts/image.sh [DIST]      (default: dist)
# The archive's path is the last line of the output.
#
# Environment:
#   GEMINI_MCP_IMAGE_NAME  the image's name without tag (default:
#                          ghcr.io/gemini-mcp-server/gemini-mcp-server, as
#                          server.json names it); the tag is the version
#                          GoReleaser stamped, a + made a -
#   GOARCH                 the binary's architecture (default: go env GOARCH)
set -euo pipefail
cd "$(dirname "$0")/.."

dist=${1:-dist}
name=${GEMINI_MCP_IMAGE_NAME:-ghcr.io/gemini-mcp-server/gemini-mcp-server}
command -v podman >/dev/null || { echo "image.sh: podman is required (Debian: apt-get install podman)" >&2; exit 1; }
[ -f "$dist/metadata.json" ] || { echo "image.sh: $dist/metadata.json is missing: run goreleaser release --snapshot --clean first" >&2; exit 1; }
arch=${GOARCH:-$(go env GOARCH)}
bin=$(ls -d "$dist"/gemini-mcp-server_linux_"$arch"*/gemini-mcp-server 2>/dev/null | head -1 || true)
[ -x "$bin" ] || { echo "image.sh: no linux/$arch binary in $dist" >&2; exit 1; }
field() { sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p' "$dist/metadata.json"; }
version=$(field version)
commit=$(field commit)
created=$(field date)
[ -n "$version" ] || { echo "image.sh: $dist/metadata.json names no version" >&2; exit 1; }
tag=${version//+/-}
ca=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca" ] || { echo "image.sh: no CA bundle at $ca (Debian: apt-get install ca-certificates)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gemini-mcp-image.XXXXXX")
# As root, podman keeps a cache of blob digests in /var/lib/containers/cache
# whatever its storage: removed again when this build made it.
varlib=/var/lib/containers
had_varlib=
[ -e "$varlib" ] && had_varlib=1
cleanup() {
	podman rmi --all --force >/dev/null 2>&1 || true
	rm -rf "$work"
	if [ -z "$had_varlib" ] && [ "$(id -u)" = 0 ]; then
		rm -rf "$varlib"
	fi
}
trap cleanup EXIT

# podman's own storage (vfs: no kernel overlay support needed) and
# configuration, under $work.
mkdir -p "$work/tmp"
cat >"$work/storage.conf" <<CONF
[storage]
driver = "vfs"
graphroot = "$work/root"
runroot = "$work/runroot"
CONF
cat >"$work/containers.conf" <<CONF
[engine]
tmp_dir = "$work/libpod"
events_logger = "file"
events_logfile_path = "$work/events.log"
cgroup_manager = "cgroupfs"
CONF
export CONTAINERS_STORAGE_CONF="$work/storage.conf" CONTAINERS_CONF="$work/containers.conf" TMPDIR="$work/tmp"

ctx="$work/context"
mkdir -p "$ctx/data" "$ctx/rootfs/workspace" "$ctx/rootfs/tmp"
chmod 0755 "$ctx/data" "$ctx/rootfs" "$ctx/rootfs/workspace"
chmod 1777 "$ctx/rootfs/tmp"
cp "$bin" "$ctx/gemini-mcp-server"
cp "$ca" "$ctx/ca-certificates.crt"
cp LICENSE NOTICE THIRD_PARTY_NOTICES.md THIRD_PARTY_LICENSES.txt "$ctx/"

podman build --format docker --platform "linux/$arch" --pull=never \
	--build-arg "VERSION=$version" --build-arg "REVISION=$commit" --build-arg "CREATED=$created" \
	--file Containerfile --tag "$name:$tag" "$ctx"
out="$dist/gemini-mcp-server_${version}_linux_${arch}_image.tar"
rm -f "$out"
podman save --format docker-archive --output "$out" "$name:$tag"
echo "image $name:$tag"
echo "$out"
