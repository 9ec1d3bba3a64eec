/**
 * The SNMP family's PduDriver: one configured PDU reached over SNMP v2c or v3, read and written
 * through a profile (./profile.ts, ./profiles/). The core sees only the seam (../driver.ts).
 *
 * - The profile is the configured one, or (`Profile: auto`) detected once per connection from
 *   sysObjectID.0 (the vendor's enterprise subtree) and which of the vendor's tables answer; an
 *   unknown agent is an error naming its sysObjectID, never a guess.
 * - One poll is one pass: a GETBULK walk of the columns of every table together (repetitions
 *   fitted to the rows of the previous poll, bounded rows) and one GET of the scalars. An answer
 *   equal to the previous one (the same OIDs, types and values: their digest, ./digest.ts, is
 *   compared) returns the previous snapshot restamped, so the core skips its work.
 * - Writes: SET of the profile's control or name object at the outlet's row (as found in the last
 *   poll), INTEGER for commands, OCTET STRING for names; a reboot or an energy reset is never sent
 *   twice. What the MIB cannot do is refused (`refused`: 409) naming the model.
 * - Secrets (communities, keys) are never logged nor put in messages.
 */
import type { InstanceConfig } from "../../config/schema.js";
import { silentLogger, type Logger } from "../../log.js";
import { ParseError, PduError, refusedUnsent } from "../errors.js";
import type { OutletSettings, OutletTarget, PduDriver, SwitchAction } from "../driver.js";
import { restamp, type Snapshot, type Vendor } from "../model.js";
import { digestOf } from "./digest.js";
import { parsePoll, type Addressing, type PollData, type WalkedVarbind } from "./parse.js";
import { columnOf, polledColumnIds, tableOf, type CellRef, type SnmpProfile } from "./profile.js";
import { PROFILES, profileById } from "./profiles.js";
import { OTHER_DRIVER_AGENTS } from "./profiles/vertiv-geist.js";
import type { SnmpAuth, SnmpTransport, TransportOptions } from "./transport.js";

/**
 * Most SNMP polls in flight at once in the process, over every SNMP instance: a poll waits for a
 * slot (its caller's abort still ends the wait), so a thousand units due at the same moment never
 * put thousands of walks, sockets' worth of answers and parses on the event loop together. Each
 * unit's poll is one walk at a time anyway (one request in flight per unit).
 */
export const MAX_CONCURRENT_POLLS = 64;

class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(size: number) {
    this.#free = size;
  }
  async acquire(signal: AbortSignal | undefined): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error("aborted"));
      };
      this.#waiting.push(grant);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
  release(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#free++;
  }
}

const POLL_SLOTS = new Slots(MAX_CONCURRENT_POLLS);

/** Most rows read of one table column (a huge table is cut there, with a warning). */
export const MAX_TABLE_ROWS = 2048;

/** A profile's static tables (profile.ts `TableDef.static`) are walked again every this many polls. */
export const STATIC_TABLE_POLLS = 60;

/** One table's walk, as the transport returns it. */
type TableWalk = Awaited<ReturnType<SnmpTransport["walkTables"]>>[number];
const NOT_WALKED: TableWalk = Object.freeze({ varbinds: [], truncated: false });

const UNKNOWN_VENDOR: Vendor = Object.freeze({ manufacturer: "SNMP PDU", groupModel: "Group" });
const vendors = new Map<string, Vendor>();
function vendorOf(profile: SnmpProfile): Vendor {
  let v = vendors.get(profile.id);
  if (v === undefined) {
    v = Object.freeze({ manufacturer: profile.manufacturer, groupModel: "Group" });
    vendors.set(profile.id, v);
  }
  return v;
}

export interface SnmpDriverOptions {
  readonly logger?: Logger;
  /** Rows per table column; default {@link MAX_TABLE_ROWS}. */
  readonly maxRows?: number;
}

function authOf(instance: InstanceConfig): SnmpAuth {
  const s = instance.Snmp;
  if (s.Version === "2c") {
    return {
      version: "2c",
      ...(s.Community === null ? {} : { community: s.Community }),
      ...(s.WriteCommunity === null ? {} : { writeCommunity: s.WriteCommunity }),
    };
  }
  return {
    version: "3",
    username: s.Auth.Username ?? "",
    authProtocol: s.Auth.Protocol,
    privProtocol: s.Auth.PrivProtocol,
    ...(s.AuthKey === null ? {} : { authKey: s.AuthKey }),
    ...(s.PrivKey === null ? {} : { privKey: s.PrivKey }),
  };
}

export class SnmpDriver implements PduDriver {
  readonly instanceId: string;
  readonly #transportOptions: TransportOptions;
  /** Made on first use: net-snmp is loaded only by a process that has an SNMP instance. */
  #transportMade: Promise<SnmpTransport> | null = null;
  #transportNow: SnmpTransport | null = null;
  #closed = false;
  readonly #where: string;
  readonly #configured: SnmpProfile | null;
  readonly #logger: Logger;
  #profile: SnmpProfile | null;
  #last: { digest: string; snapshot: Snapshot; addressing: Addressing } | null = null;
  /** The static tables' last walk, by table name, and the polls since (empty: walk them). */
  readonly #staticWalks = new Map<string, TableWalk>();
  #staticAge = 0;
  readonly #maxRows: number;

  constructor(instance: InstanceConfig, options: SnmpDriverOptions = {}) {
    this.instanceId = instance.id;
    const c = instance.Connection;
    this.#where = c.Host.includes(":") ? `[${c.Host}]:${c.Port}` : `${c.Host}:${c.Port}`;
    this.#transportOptions = {
      instanceId: instance.id,
      host: c.Host,
      port: c.Port,
      timeout: c.Timeout,
      auth: authOf(instance),
      maxRepetitions: instance.Snmp.MaxRepetitions,
      maxRows: options.maxRows ?? MAX_TABLE_ROWS,
    };
    this.#maxRows = options.maxRows ?? MAX_TABLE_ROWS;
    this.#configured = instance.Snmp.Profile === "auto" ? null : (profileById(instance.Snmp.Profile) ?? null);
    this.#profile = this.#configured;
    this.#logger = (options.logger ?? silentLogger()).child({ instance: instance.id });
  }

  #transport(): Promise<SnmpTransport> {
    if (this.#closed)
      return Promise.reject(new PduError("unreachable", `cannot reach ${this.#where}: closed`));
    this.#transportMade ??= import("./transport.js").then(({ SnmpTransport }) => {
      const t = new SnmpTransport(this.#transportOptions);
      if (this.#closed) t.close();
      this.#transportNow = t;
      return t;
    });
    return this.#transportMade;
  }

  get vendor(): Vendor {
    return this.#profile === null ? UNKNOWN_VENDOR : vendorOf(this.#profile);
  }

  /** The profile in use (null until detected). */
  get profile(): SnmpProfile | null {
    return this.#profile;
  }

  async poll(signal?: AbortSignal): Promise<Snapshot> {
    await POLL_SLOTS.acquire(signal);
    try {
      return await this.#poll(signal);
    } catch (e) {
      this.#staticWalks.clear(); // the unit may come back another one
      throw e;
    } finally {
      POLL_SLOTS.release();
    }
  }

  /** Every table's walk, in the profile's order: static ones kept from an earlier poll where they may be. */
  async #walk(transport: SnmpTransport, profile: SnmpProfile, signal?: AbortSignal): Promise<TableWalk[]> {
    const keep = this.#staticWalks.size > 0 && this.#staticAge < STATIC_TABLE_POLLS;
    const walk = profile.tables.filter((t) => !(keep && t.static === true));
    const polled = polledColumnIds(profile);
    const walked = await transport.walkTables(
      walk.map((table) => ({ entry: table.oid, columnIds: polled.get(table.name) ?? [] })),
      signal,
    );
    const byName = new Map(walk.map((t, i) => [t.name, walked[i]]));
    if (keep) this.#staticAge++;
    else {
      this.#staticWalks.clear();
      this.#staticAge = 0;
      for (const t of profile.tables) {
        const w = byName.get(t.name);
        if (t.static === true && w !== undefined) this.#staticWalks.set(t.name, w);
      }
    }
    return profile.tables.map((t) => byName.get(t.name) ?? this.#staticWalks.get(t.name) ?? NOT_WALKED);
  }

  async #poll(signal: AbortSignal | undefined): Promise<Snapshot> {
    const transport = await this.#transport();
    transport.beginPoll();
    const profile = (this.#profile ??= await this.#detect(transport, signal));
    const walked = await this.#walk(transport, profile, signal);
    const tables = new Map<string, readonly WalkedVarbind[]>();
    const truncated: string[] = [];
    profile.tables.forEach((table, i) => {
      const w = walked[i];
      if (w?.truncated === true) truncated.push(table.name);
      tables.set(table.name, w?.varbinds ?? []);
    });
    const scalarOids = Object.keys(profile.scalars ?? {});
    const scalarList = await transport.get(scalarOids, signal);
    const scalars = new Map<string, WalkedVarbind>();
    for (const vb of scalarList) scalars.set(vb.oid, vb);
    const digest = digestOf([...walked.map((w) => w.varbinds), scalarList]);
    const timestamp = Date.now();
    const last = this.#last;
    if (last !== null && last.digest === digest) return restamp(last.snapshot, timestamp);
    this.#last = null;
    const data: PollData = { tables, scalars };
    let parsed: ReturnType<typeof parsePoll>;
    try {
      parsed = parsePoll(profile, data, this.instanceId, timestamp, vendorOf(profile));
    } catch (e) {
      if (e instanceof ParseError) throw new ParseError(e.path, e.problem, `SNMP walk of ${this.#where}`);
      throw e;
    }
    let snapshot = parsed.snapshot;
    if (truncated.length > 0) {
      const extra = truncated.map((name) => ({
        path: name,
        problem: `more than ${this.#maxRows} rows: the rest of the table was not read`,
      }));
      snapshot = Object.freeze({
        ...snapshot,
        warnings: Object.freeze([...(snapshot.warnings ?? []), ...extra]),
      });
    }
    this.#last = { digest, snapshot, addressing: parsed.addressing };
    return snapshot;
  }

  /** sysObjectID → the vendor's profiles → the first whose probe table answers a row. */
  async #detect(transport: SnmpTransport, signal: AbortSignal | undefined): Promise<SnmpProfile> {
    const { objectId: sysObjectId, descr } = await transport.identify(signal);
    const candidates = PROFILES.filter((p) =>
      p.sysObjectIds.some((prefix) => sysObjectId.startsWith(prefix)),
    );
    const description = descr === "" ? "" : ` (sysDescr "${descr}")`;
    const other = OTHER_DRIVER_AGENTS.find((a) => sysObjectId.startsWith(a.sysObjectId));
    if (candidates.length === 0 && other !== undefined) {
      throw new PduError(
        "malformed",
        `${this.#where} is a ${other.vendor} unit (sysObjectID ${sysObjectId}${description}): it is read over its HTTP API, not SNMP; use Driver: ${other.driver} for this instance (docs/snmp.md)`,
      );
    }
    if (candidates.length === 0) {
      throw new PduError(
        "malformed",
        `${this.#where} is not a known SNMP PDU: sysObjectID ${sysObjectId === "" ? "(none)" : sysObjectId}${description} matches no profile; set Snmp.Profile if it is one (docs/snmp.md)`,
      );
    }
    for (const profile of candidates) {
      for (const name of typeof profile.probe === "string" ? [profile.probe] : profile.probe) {
        const probe = tableOf(profile, name);
        const first = Object.values(probe.columns)[0];
        if (first === undefined) continue;
        const { varbinds } = await transport.walkColumns(probe.oid, [first.id], signal);
        if (varbinds.length > 0) {
          this.#logger.info({ profile: profile.id, sysObjectId }, "SNMP profile detected");
          return profile;
        }
      }
    }
    throw new PduError(
      "malformed",
      `${this.#where} (sysObjectID ${sysObjectId}) answers none of the tables of ${candidates.map((p) => p.id).join(", ")}; set Snmp.Profile if it is one of them`,
    );
  }

  #model(deviceId: string): string {
    return this.#last?.addressing.models.get(deviceId) ?? this.#profile?.family ?? "this SNMP PDU";
  }

  #rowOf(table: string, target: OutletTarget): readonly number[] {
    const row = this.#last?.addressing.rows.get(target.deviceId)?.get(table)?.get(target.index);
    if (row === undefined) {
      throw refusedUnsent(
        `outlet ${target.index + 1} of ${target.deviceId} is not in the last answer of ${this.#where}: nothing was sent`,
      );
    }
    return row;
  }

  async controlOutlet(target: OutletTarget, action: SwitchAction, signal?: AbortSignal): Promise<void> {
    const profile = this.#profile;
    const control = profile?.control;
    const device = this.#last?.snapshot.devices.find((d) => d.id === target.deviceId);
    if (profile === null || control === undefined || device?.canSwitchOutlets === false) {
      throw refusedUnsent(
        device?.lacks?.canSwitchOutlets ??
          `${this.#model(target.deviceId)} has no outlet switching over SNMP`,
      );
    }
    const value = control[action];
    const name = control.columns?.[action] ?? control.column;
    const column = columnOf(profile, { table: control.table, column: name });
    const row = this.#rowOf(control.table, target);
    const oid = `${tableOf(profile, control.table).oid}.${column.id}.${row.join(".")}`;
    await (
      await this.#transport()
    ).set(
      { oid, type: "Integer", value },
      `${action} of outlet ${target.index + 1} (SET ${name}.${row.join(".")} = ${value})`,
      action === "reboot",
      signal,
    );
  }

  async resetOutletEnergy(target: OutletTarget, signal?: AbortSignal): Promise<void> {
    const profile = this.#profile;
    const reset = profile?.resetEnergy;
    const device = this.#last?.snapshot.devices.find((d) => d.id === target.deviceId);
    if (device?.canResetOutletEnergy === false && device.lacks?.canResetOutletEnergy !== undefined)
      throw refusedUnsent(device.lacks.canResetOutletEnergy);
    if (profile === null || reset === undefined) {
      const why = profile?.resetStatsRefusal ?? "the family has no energy reset";
      throw refusedUnsent(
        `${this.#model(target.deviceId)} cannot reset one outlet's statistics: ${why}; nothing was sent`,
      );
    }
    const row = this.#rowOf(profile.outlets.table, target);
    const oid = [reset.oid, ...row, ...reset.suffix].join(".");
    await (
      await this.#transport()
    ).set(
      { oid, type: reset.type ?? "Integer", value: reset.value },
      `energy reset of outlet ${target.index + 1} (SET ${reset.name})`,
      true,
      signal,
    );
  }

  /**
   * Writes an outlet's name and delays where the profile has writable objects for them (one SET
   * each, in the order label, on, off, reboot delay; each may be sent again, so a retry does no
   * harm). The power-on action, or a setting the MIB has no object for, is refused before anything
   * is sent.
   */
  async setOutletSettings(
    target: OutletTarget,
    settings: OutletSettings,
    signal?: AbortSignal,
  ): Promise<void> {
    const profile = this.#profile;
    if (profile === null) throw refusedUnsent("the SNMP PDU has not been polled yet");
    const delays = profile.outlets.delays;
    const refs: Record<string, CellRef | undefined> = {
      onDelay: delays?.on,
      offDelay: delays?.off,
      rebootDelay: delays?.reboot,
    };
    const writes: { ref: CellRef; type: "Integer" | "OctetString"; value: number | Buffer; what: string }[] =
      [];
    const unsupported: string[] = [];
    for (const [key, value] of Object.entries(settings) as [keyof OutletSettings, unknown][]) {
      if (value === undefined) continue;
      if (key === "label") {
        const def = profile.outletLabel;
        if (def === undefined) {
          unsupported.push("label");
          continue;
        }
        const bytes = Buffer.from(typeof value === "string" ? value : "", "utf8");
        if (bytes.length > def.maxLength) {
          throw refusedUnsent(
            `${this.#model(target.deviceId)} takes outlet names of at most ${def.maxLength} bytes (${def.column}); this one has ${bytes.length}`,
          );
        }
        writes.push({ ref: def, type: "OctetString", value: bytes, what: "name" });
        continue;
      }
      const ref = refs[key];
      if (ref === undefined || typeof value !== "number" || !columnOf(profile, ref).writable) {
        unsupported.push(key);
        continue;
      }
      writes.push({ ref, type: "Integer", value, what: key });
    }
    if (unsupported.length > 0) {
      throw refusedUnsent(
        `${this.#model(target.deviceId)} has no writable SNMP object for ${unsupported.join(", ")}: nothing was sent`,
      );
    }
    for (const w of writes) {
      const row = this.#rowOf(w.ref.table, target);
      const oid = `${tableOf(profile, w.ref.table).oid}.${columnOf(profile, w.ref).id}.${row.join(".")}`;
      await (
        await this.#transport()
      ).set(
        { oid, type: w.type, value: w.value },
        `${w.what} of outlet ${target.index + 1} (SET ${w.ref.column})`,
        false,
        signal,
      );
    }
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#transportNow?.close();
    return Promise.resolve();
  }
}
