/**
 * The schema of every REST route, by the route's name in `API_ROUTES` (paths.ts): summary,
 * description, operation id, tags, and the typebox schemas of its parameters, body and answers. A
 * plugin registers a route as `app.route({ ...API_ROUTES.x, schema: API_ROUTE_SCHEMAS.x, handler })`,
 * so the method, the path and the schema come from the two tables and only the handler from the
 * plugin; the OpenAPI document is generated from what they register. The table has exactly the
 * keys of API_ROUTES (a route without a schema, or a schema without a route, does not compile). The
 * schemas themselves are in one file per resource; this table stays out of the console's browser
 * bundle, which includes paths.ts only.
 */
import type { FastifySchema } from "fastify";
import { ASSET_SCHEMA, ASSETS_SCHEMA, FEEDS_SCHEMA } from "./asset-schemas.js";
import { EVENTS_SCHEMA, HISTORY_SCHEMA } from "./console-schemas.js";
import {
  ASSET_CONTROL_SCHEMA,
  SEQUENCE_GET_SCHEMA,
  SEQUENCE_START_SCHEMA,
  SEQUENCE_STOP_SCHEMA,
} from "./control/asset-schemas.js";
import { GROUP_CONTROL_SCHEMA, KEY_CHECK_SCHEMA, OUTLET_CONTROL_SCHEMA } from "./control/schemas.js";
import {
  DEVICE_SETTINGS_SCHEMA,
  ENTITY_SETTINGS_SCHEMA,
  GROUP_SETTINGS_SCHEMA,
  OUTLET_SETTINGS_SCHEMA,
} from "./control/settings-schemas.js";
import { ENERGY_SCHEMA } from "./energy-schemas.js";
import type { ApiRouteName } from "./paths.js";
import {
  ALARMS_SCHEMA,
  HEALTH_SCHEMA,
  INSTANCES_SCHEMA,
  OPENAPI_SCHEMA,
  READINGS_SCHEMA,
  SNAPSHOTS_SCHEMA,
} from "./read-schemas.js";

export const API_ROUTE_SCHEMAS = {
  instances: INSTANCES_SCHEMA,
  health: HEALTH_SCHEMA,
  snapshots: SNAPSHOTS_SCHEMA,
  readings: READINGS_SCHEMA,
  alarms: ALARMS_SCHEMA,
  assets: ASSETS_SCHEMA,
  asset: ASSET_SCHEMA,
  feeds: FEEDS_SCHEMA,
  energy: ENERGY_SCHEMA,
  keyCheck: KEY_CHECK_SCHEMA,
  events: EVENTS_SCHEMA,
  outletControl: OUTLET_CONTROL_SCHEMA,
  groupControl: GROUP_CONTROL_SCHEMA,
  outletSettings: OUTLET_SETTINGS_SCHEMA,
  deviceSettings: DEVICE_SETTINGS_SCHEMA,
  entitySettings: ENTITY_SETTINGS_SCHEMA,
  groupSettings: GROUP_SETTINGS_SCHEMA,
  outletHistory: HISTORY_SCHEMA,
  assetControl: ASSET_CONTROL_SCHEMA,
  sequenceStart: SEQUENCE_START_SCHEMA,
  sequenceGet: SEQUENCE_GET_SCHEMA,
  sequenceStop: SEQUENCE_STOP_SCHEMA,
  openApi: OPENAPI_SCHEMA,
} as const satisfies { readonly [K in ApiRouteName]: FastifySchema };
