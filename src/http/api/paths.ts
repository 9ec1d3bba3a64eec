/**
 * The one table of the REST API's paths. The routes register these patterns (so the OpenAPI
 * document lists them), the fast path and the API worker match the plain reads against them, and the
 * web console's client builds its URLs from them with {@link fillPath}. It imports nothing: the
 * console's browser bundle includes it.
 */
export const API_PATHS = {
  instances: "/api/v1/instances",
  health: "/api/v1/health",
  snapshots: "/api/v1/snapshots",
  readings: "/api/v1/readings",
  alarms: "/api/v1/alarms",
  keyCheck: "/api/v1/key",
  events: "/api/v1/events",
  outletControl: "/api/v1/instances/:id/outlets/:deviceId/:index/control",
  groupControl: "/api/v1/instances/:id/groups/:groupKey/control",
  outletSettings: "/api/v1/instances/:id/outlets/:deviceId/:index",
  deviceSettings: "/api/v1/instances/:id/devices/:deviceId",
  entitySettings: "/api/v1/instances/:id/entities/:deviceId/:entityKey",
  groupSettings: "/api/v1/instances/:id/groups/:groupKey",
  outletHistory: "/api/v1/instances/:id/outlets/:deviceId/:index/history",
  openApi: "/openapi/v1.json",
} as const;

/** A path pattern with each `:name` replaced by its value, percent-encoded as one path segment. */
export function fillPath(pattern: string, values: Readonly<Record<string, string | number>>): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for :${name} in ${pattern}`);
    return encodeURIComponent(String(value));
  });
}
