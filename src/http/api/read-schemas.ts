/**
 * The schemas of the read routes (instances, health, snapshot ages, readings, alarms) and of the
 * OpenAPI document's own route, as the route table (route-schemas.ts) gives them to the plugins.
 */
import Type from "typebox";
import { INTERNAL_ERROR, json, jsonArray, problemResponse } from "./schemas.js";

/**
 * The documented 200 answers of the two cached read routes. Their bodies are sent as cached bytes
 * (cached-reads.ts), not serialised through these; test/http/read-bodies.test.ts proves the bytes are what
 * fastify's serialisation of these schemas gives.
 */
export const HEALTH_RESPONSE = json("Health", "Service health");
export const READINGS_RESPONSE = jsonArray("Reading", "The readings; [] for an instance not polled yet");

/** `GET /api/v1/instances`. */
export const INSTANCES_SCHEMA = {
  summary: "List the configured PDU instances",
  description: "In the order of the configuration file.",
  operationId: "listInstances",
  tags: ["Status"],
  response: { 200: jsonArray("Instance", "The configured instances"), 500: INTERNAL_ERROR },
};

/** `GET /api/v1/health`. */
export const HEALTH_SCHEMA = {
  summary: "Service health: uptime, MQTT connection and polls",
  operationId: "getHealth",
  tags: ["Status"],
  response: { 200: HEALTH_RESPONSE, 500: INTERNAL_ERROR },
};

/** `GET /api/v1/snapshots`. */
export const SNAPSHOTS_SCHEMA = {
  summary: "Time and age of the latest snapshot of every instance",
  description: "One entry per configured instance, in configuration order; both null before its first poll.",
  operationId: "listSnapshots",
  tags: ["Status"],
  response: {
    200: jsonArray("SnapshotInfo", "One entry per configured instance"),
    500: INTERNAL_ERROR,
  },
};

/** `GET /api/v1/readings`. */
export const READINGS_SCHEMA = {
  summary: "Numeric measurements of every outlet and entity",
  description:
    "One reading per numeric measurement in the latest snapshot of each instance (group rollups are not " +
    "readings). Sorted by instance, device id, outlets before entities, outlet index, entity key, type.",
  operationId: "listReadings",
  tags: ["Readings"],
  querystring: Type.Object(
    {
      instance: Type.Optional(
        Type.String({ minLength: 1, description: "Only this instance (matched case-insensitively)" }),
      ),
    },
    { additionalProperties: false },
  ),
  response: {
    200: READINGS_RESPONSE,
    400: problemResponse("Unknown query parameter or empty instance"),
    404: problemResponse("No such instance"),
    500: INTERNAL_ERROR,
  },
};

/** `GET /api/v1/alarms`. */
export const ALARMS_SCHEMA = {
  summary: "Active alarms: loads against ratings, tripped breakers and what the PDUs report",
  description:
    "Every active alarm, critical first, then by instance (configuration order), device and place. " +
    "`?instance=` limits it to one instance (matched case-insensitively), or to the alarms about several " +
    "PDUs with `$assets` (an asset's redundancy) or `$feeds` (a feed's loss), which follow the instances' " +
    "otherwise. Thresholds: `Alarms` in the configuration; ratings: the PDU's, else `Pdus.<id>.Ratings`.",
  operationId: "listAlarms",
  tags: ["Alarms"],
  querystring: Type.Object(
    {
      instance: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 64,
          description: "Only this instance, or `$assets`, or `$feeds`",
        }),
      ),
    },
    { additionalProperties: false },
  ),
  response: {
    200: jsonArray("Alarm", "The active alarms; [] when there are none"),
    400: problemResponse("Unknown query parameter or empty instance"),
    404: problemResponse("No such instance"),
    500: INTERNAL_ERROR,
  },
};

/** `GET /openapi/v1.json`. */
export const OPENAPI_SCHEMA = {
  summary: "This OpenAPI 3.1 document",
  operationId: "getOpenApiDocument",
  tags: ["Documentation"],
  response: {
    200: {
      description: "The OpenAPI document",
      content: { "application/json": { schema: Type.Object({}, { additionalProperties: true }) } },
    },
  },
};
