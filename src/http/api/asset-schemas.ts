/**
 * The schemas of the assets and feeds read routes (docs/assets.md): `GET
 * /api/v1/assets`, `/api/v1/assets/{assetId}` and `/api/v1/feeds`, and the shared schemas they
 * answer with (registered beside schemas.ts's, under `#/components/schemas`).
 */
import Type from "typebox";
import { AssetIdPattern } from "../../config/schema.js";
import { INTERNAL_ERROR, json, jsonArray, nullable, problemResponse } from "./schemas.js";

const amps = (what: string) => nullable(Type.Number(), `${what}, in A; null when not known`);
const watts = (what: string) => nullable(Type.Number(), `${what}, in W; null when not known`);

export const AssetCordSchema = Type.Object(
  {
    cord: Type.Integer({ minimum: 0, description: "The cord's position in the asset's Cords (0-based)" }),
    instanceId: Type.String({ description: "The instance it is on" }),
    deviceId: nullable(Type.String(), "The device it resolved to (or names); null while neither"),
    index: Type.Integer({ minimum: 0, description: "0-based outlet index" }),
    status: Type.Enum(["live", "off", "unknown"], {
      description: "live: its PDU is online and the outlet on; off: online and off; unknown otherwise",
    }),
    outletState: nullable(
      Type.Enum(["on", "off", "unknown"]),
      "The outlet's state as the PDU last reported it (also from an offline PDU's last snapshot), or null",
    ),
    problem: nullable(
      Type.Enum([
        "not-polled",
        "not-held",
        "offline",
        "unknown-device",
        "unknown-outlet",
        "ambiguous",
        "state-unknown",
      ]),
      "Why the cord is not live or off, or null",
    ),
    detail: nullable(Type.String(), "The problem in words, or null"),
    power: watts("The outlet's real power"),
    current: amps("The outlet's current"),
    energy: nullable(Type.Number(), "The outlet's energy counter as the PDU reports it, in kWh, or null"),
    feedsFrom: nullable(Type.String(), "The entity of its device the outlet draws through, or null"),
    feed: nullable(Type.String(), "The feed of its device, or null"),
  },
  { $id: "AssetCord", description: "One cord of an asset, as last read" },
);

export const AssetSchema = Type.Object(
  {
    id: Type.String({ description: "The asset's id (a key of Assets)" }),
    label: Type.String({ description: "Its Label, else its id" }),
    protected: Type.Boolean({ description: "An off that would leave it with no live cord is refused" }),
    priority: Type.Integer({ minimum: 0, description: "Sequence order: lower first on power-on" }),
    tenant: nullable(Type.String(), "Its tenant, or null"),
    tags: Type.Array(Type.String(), { description: "Its tags" }),
    startSeconds: Type.Number({ description: "How long it draws its start-up current (s)" }),
    state: Type.Enum(["on", "off", "partial", "unknown"], {
      description: "on: every cord live; off: every cord off; unknown: a cord unknown; else partial",
    }),
    power: watts("The sum over its cords"),
    current: amps("The sum over its cords"),
    energy: nullable(Type.Number(), "The sum of its cords' energy counters (kWh), when every cord has one"),
    cordsLive: Type.Integer({ minimum: 0, description: "Cords live now" }),
    cords: Type.Integer({ minimum: 1, description: "Cords configured" }),
    redundancy: Type.Enum(["ok", "single", "lost"], {
      description:
        "single: one cord configured; lost: a cord off, unknown or drawing under 5 % of the asset's current for 2 polls in a row; else ok",
    }),
    readings: Type.Array(Type.Ref("AssetCord"), { description: "Each cord, in configuration order" }),
  },
  { $id: "Asset", description: "An asset (a server, a switch) and its cords' state" },
);

export const ProjectedEntitySchema = Type.Object(
  {
    instanceId: Type.String({ description: "The instance of the entity" }),
    deviceId: Type.String(),
    key: Type.String({ description: "Entity key (inlet0, phase1, breaker2, ...)" }),
    name: Type.String({ description: "Its display name" }),
    measured: Type.Number({ description: "Its current now (A)" }),
    added: Type.Number({ description: "Current the feed's loss would move onto it (A)" }),
    projected: Type.Number({ description: "measured + added (A)" }),
    rating: nullable(Type.Number(), "Its rating (A): the PDU's, else Ratings; null without one"),
    ratio: nullable(Type.Number(), "projected / rating; null without a rating"),
    exact: Type.Boolean({
      description:
        "false: some moved current may also flow through it but was given to no entity of its kind (a lower bound)",
    }),
  },
  { $id: "ProjectedEntity", description: "What an entity on another feed would carry if the feed failed" },
);

export const FeedSchema = Type.Object(
  {
    id: Type.String({ description: "The feed's id (a key of Feeds)" }),
    label: Type.String({ description: "Its Label, else its id" }),
    power: watts("What the devices on the feed draw now"),
    current: amps("What the devices on the feed draw now"),
    devices: Type.Integer({ minimum: 0, description: "Devices on the feed with a reading now" }),
    unseen: Type.Array(Type.String(), {
      description: "Instances on the feed without a current reading (their draw is not in the sums)",
    }),
    ifLost: Type.Object(
      {
        entities: Type.Array(Type.Ref("ProjectedEntity"), {
          description: "The other feeds' inlets, phases, breakers and other entities with a current",
        }),
        dark: Type.Array(Type.String(), { description: "Assets that would go dark (every live cord on it)" }),
        atRisk: Type.Array(Type.String(), {
          description:
            "Assets whose other live cords are on devices of no feed: whether they survive is not known",
        }),
        unplaced: Type.Array(
          Type.Object({ instanceId: Type.String(), deviceId: Type.String(), amps: Type.Number() }),
          { description: "Current moved onto a device but onto none of its entities of some kind" },
        ),
        unseen: Type.Array(Type.String(), {
          description: "Instances on the other feeds without a current reading (not projected)",
        }),
        madeUtc: nullable(Type.String({ format: "date-time" }), "When the projection was made, or null"),
      },
      { description: "The feed-loss projection: what the rest would carry if this feed failed" },
    ),
    alarms: Type.Array(Type.Ref("Alarm"), { description: "Active feed-loss alarms of this feed's loss" }),
  },
  { $id: "Feed", description: "A feed: what it carries, and what its loss would do" },
);

/** The shared schemas of these routes (registered after schemas.ts's: they refer to `Alarm`). */
export const ASSET_SHARED_SCHEMAS = [
  AssetCordSchema,
  AssetSchema,
  ProjectedEntitySchema,
  FeedSchema,
] as const;

const idQuery = (description: string) => Type.Optional(Type.String({ pattern: AssetIdPattern, description }));

/** `GET /api/v1/assets`. */
export const ASSETS_SCHEMA = {
  summary: "Assets and the state of their cords",
  description:
    "Every configured asset in id order, with its state, sums and redundancy from its cords' latest readings (docs/assets.md). Filters combine.",
  operationId: "listAssets",
  tags: ["Assets"],
  querystring: Type.Object(
    {
      tenant: idQuery("Only this tenant's assets"),
      tag: idQuery("Only assets with this tag"),
      state: Type.Optional(
        Type.Enum(["on", "off", "partial", "unknown"], { description: "Only this state" }),
      ),
      redundancy: Type.Optional(Type.Enum(["ok", "single", "lost"], { description: "Only this redundancy" })),
    },
    { additionalProperties: false },
  ),
  response: {
    200: jsonArray("Asset", "The assets; [] when none is configured or none matches"),
    400: problemResponse("Unknown query parameter or a bad value"),
    500: INTERNAL_ERROR,
  },
};

/** `GET /api/v1/assets/{assetId}`. */
export const ASSET_SCHEMA = {
  summary: "One asset and the state of its cords",
  operationId: "getAsset",
  tags: ["Assets"],
  params: Type.Object({ assetId: Type.String({ pattern: AssetIdPattern, description: "The asset's id" }) }),
  response: {
    200: json("Asset", "The asset"),
    400: problemResponse("Not an asset id"),
    404: problemResponse("No such asset"),
    500: INTERNAL_ERROR,
  },
};

/** `GET /api/v1/feeds`. */
export const FEEDS_SCHEMA = {
  summary: "Feeds: what each carries, and what its loss would do",
  description:
    "Every configured feed in id order: the devices' draw on it, and the feed-loss projection (what the inlets, phases and breakers on the other feeds would carry if it failed, against their ratings), its alarms and the assets that would go dark (docs/assets.md).",
  operationId: "listFeeds",
  tags: ["Assets"],
  response: {
    200: jsonArray("Feed", "The feeds; [] when none is configured"),
    500: INTERNAL_ERROR,
  },
};
