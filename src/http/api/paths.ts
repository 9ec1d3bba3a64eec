/**
 * The one table of the REST API's routes: each route's method and path pattern, by name. Each
 * route's schema is the row of the same name in `API_ROUTE_SCHEMAS` (route-schemas.ts, which has
 * exactly these names); the plugins register their handlers on both rows (`app.route({
 * ...API_ROUTES.readings, schema: API_ROUTE_SCHEMAS.readings, handler })`, so the OpenAPI document
 * lists them), the fast path and the API worker match the plain reads against them, and the web
 * console's client builds its requests from them with {@link fillPath}. It imports nothing: the
 * console's browser bundle includes it, and the schemas (typebox objects) stay out of that bundle.
 */
export const API_ROUTES = {
  instances: { method: "GET", url: "/api/v1/instances" },
  health: { method: "GET", url: "/api/v1/health" },
  snapshots: { method: "GET", url: "/api/v1/snapshots" },
  readings: { method: "GET", url: "/api/v1/readings" },
  alarms: { method: "GET", url: "/api/v1/alarms" },
  assets: { method: "GET", url: "/api/v1/assets" },
  asset: { method: "GET", url: "/api/v1/assets/:assetId" },
  feeds: { method: "GET", url: "/api/v1/feeds" },
  energy: { method: "GET", url: "/api/v1/energy" },
  keyCheck: { method: "GET", url: "/api/v1/key" },
  events: { method: "GET", url: "/api/v1/events" },
  outletControl: { method: "POST", url: "/api/v1/instances/:id/outlets/:deviceId/:index/control" },
  groupControl: { method: "POST", url: "/api/v1/instances/:id/groups/:groupKey/control" },
  outletSettings: { method: "PATCH", url: "/api/v1/instances/:id/outlets/:deviceId/:index" },
  deviceSettings: { method: "PATCH", url: "/api/v1/instances/:id/devices/:deviceId" },
  entitySettings: { method: "PATCH", url: "/api/v1/instances/:id/entities/:deviceId/:entityKey" },
  groupSettings: { method: "PATCH", url: "/api/v1/instances/:id/groups/:groupKey" },
  outletHistory: { method: "GET", url: "/api/v1/instances/:id/outlets/:deviceId/:index/history" },
  assetControl: { method: "POST", url: "/api/v1/assets/:id/control" },
  sequenceStart: { method: "POST", url: "/api/v1/sequences" },
  sequenceGet: { method: "GET", url: "/api/v1/sequences/:id" },
  sequenceStop: { method: "DELETE", url: "/api/v1/sequences/:id" },
  openApi: { method: "GET", url: "/openapi/v1.json" },
} as const;

export type ApiRouteName = keyof typeof API_ROUTES;

/** The path pattern of each route of {@link API_ROUTES}, by name. */
export const API_PATHS = Object.fromEntries(
  Object.entries(API_ROUTES).map(([name, route]) => [name, route.url]),
) as { readonly [K in ApiRouteName]: (typeof API_ROUTES)[K]["url"] };

/** A path pattern with each `:name` replaced by its value, percent-encoded as one path segment. */
export function fillPath(pattern: string, values: Readonly<Record<string, string | number>>): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for :${name} in ${pattern}`);
    return encodeURIComponent(String(value));
  });
}
