/**
 * A simulated fleet with dual-corded loads (src/simulator/fleet.ts) for the assets tests: PDUs of
 * three kinds (the Geist simulator, and APC rPDU2 and Raritan PX2 units of the SNMP simulator) on
 * feeds A and B in pairs, and assets each with one cord on a PDU of feed A and one on a PDU of feed
 * B of another kind, their draws seeded (even watts, still, so every figure a PDU serves is exact).
 * Also the bridge's side without the App: each PDU's driver, and a `FleetPoller` feeding the
 * assets core (src/assets/) from real polls, as the App's wiring does.
 */
import { AssetBook, type AssetUpdate } from "../src/assets/book.js";
import type { InstanceReading } from "../src/assets/state.js";
import type { AssetConfig, AssetModel, InstanceAssetsConfig } from "../src/assets/types.js";
import type { InstanceConfig, RatingsConfig } from "../src/config/schema.js";
import { SnapshotBounds } from "../src/pdu/bounds.js";
import type { PduDriver } from "../src/pdu/driver.js";
import { createDriver } from "../src/pdu/drivers.js";
import { DEFAULT_THRESHOLDS, LoadTracker } from "../src/pdu/load.js";
import type { Snapshot } from "../src/pdu/model.js";
import { hash32, random } from "../src/simulator/living.js";
import { LoadFleet, startSimulator, type Simulator } from "../src/simulator/index.js";
import { startSnmpSimulator, type SnmpSimulator } from "../src/simulator/snmp/agent.js";
import { assetModel } from "./asset-fleet.js";
import { snmpInstance } from "./snmpsim.js";

export type FleetPduKind = "geist" | "apc-rpdu2" | "raritan-px2";

export const FLEET_KINDS: readonly FleetPduKind[] = ["geist", "apc-rpdu2", "raritan-px2"];

export interface SimulatedPdu {
  /** Its name in the fleet and its instance id. */
  readonly name: string;
  readonly kind: FleetPduKind;
  readonly feed: "A" | "B";
  readonly port: number;
  /** The Geist simulator's device id; null for an SNMP unit (one device). */
  readonly device: string | null;
  /** The bridge's configuration of it (control on, relay protection off). */
  readonly instance: InstanceConfig;
  readonly geist: Simulator | null;
  readonly snmp: SnmpSimulator | null;
}

export interface SimulatedAsset {
  readonly id: string;
  readonly watts: number;
  readonly cords: readonly { readonly pdu: string; readonly outlet: number }[];
}

export interface LoadFleetOptions {
  /** An even number of PDUs (default 20): even ones on feed A, odd ones on feed B. */
  readonly pdus?: number;
  /** Assets of two cords (default 200). */
  readonly assets?: number;
  /** Outlets per PDU (default 24). */
  readonly outlets?: number;
  readonly seed?: number;
  /** Seconds of a start's start-up power (default 3). */
  readonly startSeconds?: number;
  /** The bridge's timeout per request in seconds (default 1). */
  readonly timeout?: number;
  /** The range of the assets' draws in watts (default 80 to 180; each even). */
  readonly watts?: readonly [number, number];
}

export interface SimulatedFleet {
  readonly fleet: LoadFleet;
  readonly pdus: readonly SimulatedPdu[];
  readonly assets: readonly SimulatedAsset[];
  pdu(name: string): SimulatedPdu;
  /** The configuration's `Assets` and the instances' `Feed` of the fleet. */
  assetsConfig(): {
    Assets: Record<string, AssetConfig>;
    Pdus: Record<string, InstanceAssetsConfig>;
  };
  /** The assets core's model of the fleet. */
  model(): AssetModel;
  close(): Promise<void>;
}

/** The kind of PDU `i` (pairs of one kind: PDUs 2p and 2p + 1). */
export const kindOf = (i: number): FleetPduKind => FLEET_KINDS[(i >> 1) % FLEET_KINDS.length]!;

/** The bridge's configuration of a Geist simulator (control on, relay protection off). */
export function geistInstance(name: string, port: number, timeout: number): InstanceConfig {
  return {
    ...snmpInstance(name, port, {}, timeout),
    Driver: "geist",
    Credentials: { Username: "admin", Password: "admin" },
    RelayProtection: 0,
  };
}

async function startPdu(fleet: LoadFleet, i: number, o: Required<LoadFleetOptions>): Promise<SimulatedPdu> {
  const name = `pdu-${String(i + 1).padStart(2, "0")}`;
  const kind = kindOf(i);
  const feed = i % 2 === 0 ? "A" : "B";
  const membership = { fleet, name, feed };
  if (kind === "geist") {
    const geist = await startSimulator({
      outlets: o.outlets,
      seed: o.seed * 100 + i + 1,
      frozen: true,
      voltage: 230,
      rebootMs: 500,
      fleet: membership,
    });
    const device = geist.deviceIds()[0]!;
    const instance = geistInstance(name, geist.port, o.timeout);
    return { name, kind, feed, port: geist.port, device, instance, geist, snmp: null };
  }
  const snmp = await startSnmpSimulator({
    profile: kind,
    outlets: o.outlets,
    seed: o.seed * 100 + i + 1,
    frozen: true,
    rebootSeconds: 1,
    refreshMs: 250,
    fleet: membership,
  });
  const instance: InstanceConfig = {
    ...snmpInstance(
      name,
      snmp.port,
      { Profile: kind, Community: snmp.community, WriteCommunity: snmp.writeCommunity },
      o.timeout,
    ),
    RelayProtection: 0,
  };
  return { name, kind, feed, port: snmp.port, device: null, instance, geist: null, snmp };
}

/** Starts the PDUs and plugs in the assets; every outlet of every PDU starts on. */
export async function startLoadFleet(options: LoadFleetOptions = {}): Promise<SimulatedFleet> {
  const o: Required<LoadFleetOptions> = {
    pdus: options.pdus ?? 20,
    assets: options.assets ?? 200,
    outlets: options.outlets ?? 24,
    seed: options.seed ?? 7,
    startSeconds: options.startSeconds ?? 3,
    timeout: options.timeout ?? 1,
    watts: options.watts ?? [80, 180],
  };
  if (o.pdus % 2 !== 0 || o.pdus < 2) throw new RangeError("startLoadFleet: an even number of PDUs");
  const pairs = o.pdus / 2;
  if (Math.ceil(o.assets / pairs) > o.outlets) throw new RangeError("startLoadFleet: too few outlets");
  const fleet = new LoadFleet({ seed: o.seed, frozen: true });
  const pdus: SimulatedPdu[] = [];
  const close = async () => {
    await Promise.all(pdus.map((p) => (p.geist ?? p.snmp)!.close()));
  };
  try {
    for (let i = 0; i < o.pdus; i++) pdus.push(await startPdu(fleet, i, o));
    for (const p of pdus) {
      // Every outlet on: the fleet's loads are running when the test starts.
      if (p.geist !== null) for (let k = 0; k < o.outlets; k++) p.geist.setOutletState(p.device!, k, "on");
      else for (let k = 1; k <= o.outlets; k++) p.snmp!.unit.switch(k, "on");
    }
  } catch (e) {
    await close();
    throw e;
  }
  const used = new Map<string, number>();
  const slot = (pdu: SimulatedPdu) => {
    const n = used.get(pdu.name) ?? 0;
    used.set(pdu.name, n + 1);
    return n;
  };
  const r = random(hash32(o.seed, 0xa55e7));
  const assets: SimulatedAsset[] = [];
  for (let j = 0; j < o.assets; j++) {
    // Cord A on a feed-A PDU, cord B on the feed-B PDU of the next pair: of another kind.
    const a = pdus[2 * (j % pairs)]!;
    const b = pdus[2 * ((j + 1) % pairs) + 1]!;
    const [low, high] = o.watts;
    const watts = 2 * Math.round((low + r() * (high - low)) / 2);
    const cords = [
      { pdu: a.name, outlet: slot(a) },
      { pdu: b.name, outlet: slot(b) },
    ];
    const id = `srv-${String(j + 1).padStart(3, "0")}`;
    fleet.addLoad({
      id,
      watts,
      startSeconds: o.startSeconds,
      cords: cords.map((c) => {
        const pdu = pdus.find((p) => p.name === c.pdu)!;
        return { pdu: c.pdu, outlet: c.outlet, ...(pdu.device === null ? {} : { device: pdu.device }) };
      }),
    });
    assets.push({ id, watts, cords });
  }
  const byName = new Map(pdus.map((p) => [p.name, p]));
  const assetsConfig = () => ({
    Assets: Object.fromEntries(
      assets.map((a) => [a.id, { Cords: a.cords.map((c) => ({ Instance: c.pdu, Outlet: c.outlet })) }]),
    ),
    Pdus: Object.fromEntries(pdus.map((p) => [p.name, { Feed: p.feed }])),
  });
  return {
    fleet,
    pdus,
    assets,
    pdu: (name) => {
      const p = byName.get(name);
      if (p === undefined) throw new Error(`no PDU ${name}`);
      return p;
    },
    assetsConfig,
    model: () => {
      const c = assetsConfig();
      return assetModel(c.Assets, c.Pdus, ["A", "B"]);
    },
    close,
  };
}

interface Polled {
  readonly driver: PduDriver;
  readonly bounds: SnapshotBounds;
  load: LoadTracker;
  last: Snapshot | null;
  reading: InstanceReading;
  polls: number;
}

/**
 * The bridge's side of the assets without the App: each PDU's real driver polled over its socket,
 * the bounds and the load report applied as the poller and the store do, and one `AssetBook` fed
 * with every poll (a failed poll an offline reading), as the assets part is.
 */
export class FleetPoller {
  readonly book: AssetBook;
  readonly #pdus = new Map<string, Polled>();

  constructor(
    readonly sim: SimulatedFleet,
    model: AssetModel = sim.model(),
  ) {
    this.book = new AssetBook(model);
    for (const p of sim.pdus) {
      this.#pdus.set(p.name, {
        driver: createDriver(p.instance),
        bounds: new SnapshotBounds(),
        load: new LoadTracker(p.instance.Ratings, DEFAULT_THRESHOLDS),
        last: null,
        reading: { id: p.name, snapshot: null, online: false },
        polls: 0,
      });
    }
  }

  /** The PDU's configured ratings from now on (`Pdus.<id>.Ratings`): its load tracker starts afresh. */
  rate(name: string, ratings: RatingsConfig): void {
    const p = this.#pdus.get(name);
    if (p === undefined) throw new Error(`no PDU ${name}`);
    p.load = new LoadTracker(ratings, DEFAULT_THRESHOLDS);
  }

  /** One poll of the PDU: its reading afterwards, and what the book made of it. */
  async poll(name: string): Promise<AssetUpdate> {
    const p = this.#pdus.get(name);
    if (p === undefined) throw new Error(`no PDU ${name}`);
    try {
      const snapshot = p.bounds.apply(await p.driver.poll());
      p.last = snapshot;
      p.reading = { id: name, snapshot, online: true, load: p.load.assess(snapshot).report };
    } catch {
      p.reading = { ...p.reading, online: false };
    }
    p.polls++;
    return this.book.update(p.reading, true, Date.now());
  }

  /** One round: every PDU (or those named) polled once, in parallel; what the book made of each poll. */
  async round(names: readonly string[] = this.sim.pdus.map((p) => p.name)): Promise<AssetUpdate[]> {
    return Promise.all(names.map((name) => this.poll(name)));
  }

  reading(name: string): InstanceReading {
    const p = this.#pdus.get(name);
    if (p === undefined) throw new Error(`no PDU ${name}`);
    return p.reading;
  }

  readings(): ReadonlyMap<string, InstanceReading> {
    return new Map([...this.#pdus].map(([name, p]) => [name, p.reading]));
  }

  driver(name: string): PduDriver {
    const p = this.#pdus.get(name);
    if (p === undefined) throw new Error(`no PDU ${name}`);
    return p.driver;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#pdus.values()].map((p) => p.driver.close()));
  }
}
