/**
 * The Geist request semantics of one listener (one unit's port), independent of sockets:
 * reads of `/api` and `/oneview` sub-trees, login, and the token-checked writes.
 */

import { randomBytes } from "node:crypto";
import type { SimDevice, SimState, SimUnit } from "./state.js";
import { ENTITY_KEYS } from "./state.js";
import { apiTree, oneviewTree } from "./tree.js";

/** retCodes. 2001 and 2003 are the simulator's own choices (the protocol page lists none for these). */
export const RET = {
  ok: 0,
  unauthorised: 1001,
  wrongPassword: 1004,
  /** Malformed body, unknown cmd, unknown/invalid field or out-of-range value. */
  invalid: 2001,
  /** `conf.outletControlEnabled` is false on the device. */
  controlDisabled: 2003,
  notFound: 3001,
} as const;

export interface Envelope {
  retCode: number;
  retMsg: string;
  data: unknown;
}

export interface Reply {
  status: number;
  envelope: Envelope;
}

export interface ListenerContext {
  readonly state: SimState;
  readonly unit: SimUnit;
  /** token → user; one store per listener port. */
  readonly tokens: Map<string, string>;
  /** A member's proxy port, for the `/oneview` host map. */
  readonly proxyPort: (unit: SimUnit) => number;
}

const ok = (data: unknown = {}): Reply => ({
  status: 200,
  envelope: { retCode: RET.ok, retMsg: "OK", data },
});
const fail = (retCode: number, retMsg: string, status = 200): Reply => ({
  status,
  envelope: { retCode, retMsg, data: null },
});
const notFound = (status = 200): Reply => fail(RET.notFound, "path not found", status);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** Path segments, URL-decoded; null when an escape is malformed. */
export function segments(path: string): string[] | null {
  try {
    return path
      .split("/")
      .filter((s) => s !== "")
      .map((s) => decodeURIComponent(s));
  } catch {
    return null;
  }
}

function navigate(tree: unknown, path: readonly string[]): unknown {
  let node = tree;
  for (const seg of path) {
    if (Array.isArray(node) && /^\d+$/.test(seg)) node = node[Number(seg)];
    else if (isObj(node) && Object.hasOwn(node, seg)) node = node[seg];
    else return undefined;
  }
  return node;
}

export function handleGet(ctx: ListenerContext, segs: readonly string[]): Reply {
  const [root, ...rest] = segs;
  let tree: unknown;
  if (root === "api") tree = apiTree(ctx.state, ctx.unit);
  else if (root === "oneview") {
    if (ctx.unit.role !== "master") return notFound();
    tree = oneviewTree(ctx.state, ctx.proxyPort);
  } else return notFound(404);
  const data = navigate(tree, rest);
  return data === undefined ? notFound() : ok(data);
}

export function handlePost(ctx: ListenerContext, segs: readonly string[], body: unknown): Reply {
  if (segs[0] !== "api" && segs[0] !== "oneview") return notFound(404);
  if (!isObj(body) || typeof body.cmd !== "string") return fail(RET.invalid, "invalid request");
  if (segs.length === 3 && segs[0] === "api" && segs[1] === "auth") return auth(ctx, segs[2] ?? "", body);
  if (typeof body.token !== "string" || !ctx.tokens.has(body.token))
    return fail(RET.unauthorised, "unauthorised");
  const data = isObj(body.data) ? body.data : {};
  const cmd = body.cmd;

  if (segs[0] === "oneview") {
    const group = segs.length === 3 && segs[1] === "group" ? ctx.state.findGroup(segs[2] ?? "") : undefined;
    if (ctx.unit.role !== "master" || !group) return notFound();
    return setLabel(cmd, data, (label) => (group.label = label));
  }
  if (segs[1] !== "dev" || segs.length < 3) return notFound();
  const device = ctx.unit.devices.get(segs[2] ?? "");
  if (!device) return notFound();
  if (segs.length === 3) return setLabel(cmd, data, (label) => (device.label = label));
  if (segs.length !== 5) return notFound();
  const key = segs[4] ?? "";
  if (segs[3] === "entity" && ENTITY_KEYS.includes(key))
    return setLabel(cmd, data, (label) => device.entityLabels.set(key, label));
  if (segs[3] === "outlet" && /^(0|[1-9]\d*)$/.test(key))
    return outletWrite(ctx, device, Number(key), cmd, data);
  return notFound();
}

function auth(ctx: ListenerContext, user: string, body: Obj): Reply {
  if (body.cmd === "logout") {
    if (typeof body.token === "string") ctx.tokens.delete(body.token);
    return ok();
  }
  if (body.cmd !== "login") return fail(RET.invalid, "invalid command");
  const expected = ctx.state.users.get(user);
  if (expected === undefined) return fail(RET.unauthorised, "unknown user");
  const password = isObj(body.data) ? body.data.password : undefined;
  if (password !== expected) return fail(RET.wrongPassword, "wrong password");
  const token = randomBytes(8).toString("hex");
  ctx.tokens.set(token, user);
  return ok({ token, admin: user === "admin", control: true, language: "en" });
}

function setLabel(cmd: string, data: Obj, apply: (label: string) => void): Reply {
  const keys = Object.keys(data);
  if (cmd !== "set" || keys.length !== 1 || !isLabel(data.label)) return fail(RET.invalid, "invalid request");
  apply(data.label);
  return ok();
}

const isLabel = (v: unknown): v is string => typeof v === "string" && v.length <= 64;
const isDelay = (v: unknown): v is number =>
  Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 3600;
const isPoa = (v: unknown): v is "on" | "off" | "last" => v === "on" || v === "off" || v === "last";

function outletWrite(ctx: ListenerContext, device: SimDevice, index: number, cmd: string, data: Obj): Reply {
  const outlet = device.outlets.get(index);
  if (!outlet) return notFound();
  const { state } = ctx;
  switch (cmd) {
    case "control": {
      if (!device.outletControlEnabled) return fail(RET.controlDisabled, "outlet control disabled");
      const action = data.action;
      if (action !== "on" && action !== "off" && action !== "reboot")
        return fail(RET.invalid, "invalid action");
      state.control(outlet, action, data.delay === true);
      return ok();
    }
    case "reset":
      if (data.target !== "energy") return fail(RET.invalid, "invalid target");
      outlet.setEnergyKwh(state.now(), 0);
      return ok();
    case "set": {
      const entries = Object.entries(data);
      const valid = entries.every(([k, v]) =>
        k === "label"
          ? isLabel(v)
          : k === "onDelay" || k === "offDelay" || k === "rebootDelay"
            ? isDelay(v)
            : k === "poaAction" && isPoa(v),
      );
      if (entries.length === 0 || !valid) return fail(RET.invalid, "invalid value");
      if (isLabel(data.label)) outlet.label = data.label;
      if (isDelay(data.onDelay)) outlet.onDelay = data.onDelay;
      if (isDelay(data.offDelay)) outlet.offDelay = data.offDelay;
      if (isDelay(data.rebootDelay)) outlet.rebootDelay = data.rebootDelay;
      if (isPoa(data.poaAction)) outlet.poaAction = data.poaAction;
      return ok();
    }
    default:
      return fail(RET.invalid, "invalid command");
  }
}
