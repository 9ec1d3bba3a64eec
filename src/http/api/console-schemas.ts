/**
 * The schemas of the console's API routes: the event stream and an outlet's power history. The web
 * console (src/ui/routes.ts) registers them from the route table (route-schemas.ts).
 */
import Type from "typebox";
import { DeviceIdParam, InstanceIdParam, OutletIndexParam } from "./params.js";
import { INTERNAL_ERROR, problemResponse, RetryAfterHeader } from "./schemas.js";

/** `GET /api/v1/events`. */
export const EVENTS_SCHEMA = {
  summary: "Live updates for the web console (server-sent events)",
  description:
    "A `text/event-stream` that stays open. Events: `status` (`{instances:[…]}`: every instance on " +
    "connect, then each one whose poll status changed: online/failing/pending, last poll, error, " +
    "consecutive failures, device count, total power, label, model, alarm counts, most loaded phase, bank or breaker), " +
    "`snapshot` (the latest snapshot of an instance with each load against its rating and its active " +
    "alarms, on connect and after every poll or commanded state change), `control` (the outcome of every " +
    "control request, REST or MQTT), `alarm` (an alarm raised, changed or cleared), `trap` (what an " +
    "SNMP trap from an instance's PDU told: kind, notification, outlet, state, label; at most 5 a second " +
    "per instance), and on connect `alarms` (every active alarm) and `recent` (the latest alarm, " +
    "control and trap events). " +
    "`assets` (`{changed, feeds, reconfigured}`, at most one each half second: assets changed, or the " +
    "feed-loss projection was made again; read `/api/v1/assets` and `/api/v1/feeds` again). " +
    "`?instance=` limits the snapshot events to one instance, " +
    "`?snapshots=false` leaves them out. A stream is ended after at most 15 minutes, after a " +
    "`reconnect` event: open a new one (browsers reconnect by themselves). At most 8 streams per " +
    "client address (429 beyond) and 64 in all (503 beyond, unless another client holds more than " +
    "its share: its oldest stream is ended to make room); a client that stops reading is disconnected.",
  operationId: "streamEvents",
  tags: ["Status"],
  querystring: Type.Object(
    {
      instance: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 64,
          description: "Snapshot events of this instance only",
        }),
      ),
      snapshots: Type.Optional(
        Type.Enum(["true", "false"], { description: "`false`: no snapshot events (default `true`)" }),
      ),
    },
    { additionalProperties: false },
  ),
  response: {
    200: {
      description: "The event stream",
      content: { "text/event-stream": { schema: Type.String({ description: "Server-sent events" }) } },
    },
    400: problemResponse("Unknown query parameter or bad value"),
    404: problemResponse("No such instance"),
    429: problemResponse("Too many open event streams from this client address", {
      "Retry-After": RetryAfterHeader,
    }),
    503: problemResponse("Too many open event streams", { "Retry-After": RetryAfterHeader }),
    500: INTERNAL_ERROR,
  },
};

/** `GET /api/v1/instances/:id/outlets/:deviceId/:index/history`. */
export const HISTORY_SCHEMA = {
  summary: "Real power of one outlet over the last hour",
  description:
    "Every poll of the last hour (kept in memory by the service, lost on restart): `times` in epoch " +
    "milliseconds and `values` in watts (null where the outlet reported no number), oldest first.",
  operationId: "getOutletHistory",
  tags: ["Readings"],
  // The same rules as every other outlet route: what one accepts, all accept.
  params: Type.Object({ id: InstanceIdParam, deviceId: DeviceIdParam, index: OutletIndexParam }),
  response: {
    200: {
      description: "The outlet's power samples",
      content: {
        "application/json": {
          schema: Type.Object({
            instanceId: Type.String(),
            deviceId: Type.String(),
            index: Type.Integer({ minimum: 0 }),
            type: Type.Literal("realPower"),
            units: Type.Literal("W"),
            times: Type.Array(Type.Number()),
            values: Type.Array(Type.Union([Type.Number(), Type.Null()])),
          }),
        },
      },
    },
    400: problemResponse("Bad path parameter"),
    404: problemResponse("Unknown instance, or an outlet the service has not seen in the last hour"),
    500: INTERNAL_ERROR,
  },
};
