/**
 * The simulated SNMP PDU of each profile: its state (outlets on or off, names, living currents,
 * accruing energy) and the MIB tables it answers, in the shape of the project's recordings
 * (testkit/snmprec/: the same tables, columns, types and index structure; a test holds the two
 * together). Values move with time; writes change the state. The CyberPower, Eaton and Sentry3
 * units build their tables in files of their own (./families.ts) from the unit's `view`.
 */
import { Wave, hash32, random } from "../living.js";
import {
  FAMILY_SIM_PROFILES,
  familyChain,
  familyCommand,
  familyContent,
  familyDefaultName,
} from "./families.js";
import { TableBuilder, type SimContent, type SimScalar, type SimValue, type FamilyView } from "./tables.js";

export type {
  SimColumn,
  SimContent,
  SimRow,
  SimScalar,
  SimTable,
  SimType,
  SimValue,
  WriteRole,
} from "./tables.js";

/** The profiles the simulator serves. */
export const SIM_PROFILES = [
  "apc-rpdu2",
  "apc-rpdu",
  "raritan-px2",
  "raritan-px",
  "servertech-sentry4",
  ...FAMILY_SIM_PROFILES,
] as const;
export type SimProfile = (typeof SIM_PROFILES)[number];

/**
 * What a load plugged into the outlet draws, from the unit's fleet of loads (../fleet.ts), at
 * epoch ms: an outlet of a unit in a fleet draws only what its socket says.
 */
export interface SnmpSocket {
  watts(t: number): number;
  powerFactor(): number;
  /** Energy drawn through the outlet since the fleet began: never decreases. */
  energyWh(t: number): number;
  /** Before the outlet's relay switches at `t`... */
  switching(t: number): void;
  /** ...and after it switched (or was scheduled to). */
  switched(t: number): void;
}

interface OutletState {
  on: boolean;
  name: string;
  /** Load in amps while on. */
  readonly wave: Wave;
  /** Accrued energy in watt-hours: the unit's counter, which resets. */
  energyWh: number;
  /**
   * The ground truth: the counter's start plus the power drawn at this place integrated over
   * time, never reset nor replaced (what a lifetime counter should end at).
   */
  truthWh: number;
  /** Reboot in progress: back on at this time (epoch ms). */
  backOnAt: number | null;
  /** Set when the unit is in a fleet of loads. */
  socket: SnmpSocket | null;
  /** The socket's energy counter when last read. */
  socketWh: number;
  /** Its bank's breaker has tripped: it draws nothing, its relay as it was ({@link SimUnit.tripBank}). */
  unpowered: boolean;
}

/** The volts a unit's outlets run at (the figure its tables serve). */
export const UNIT_VOLTS = 230;
/** Where a 32-bit energy counter (an Unsigned32 of watt-hours) wraps back to 0. */
export const WRAP_WH = 2 ** 32;

const I = "Integer";
const S = "OctetString";
const G = "Gauge";

/** Base loads (tenths of amps) of the first outlets, as in the recordings; later ones are seeded. */
const BASE_TENTHS = [12, 0, 31, 5, 0, 18, 7, 2];
const BASE_ON = [true, false, true, true, false, true, true, true];

export interface UnitOptions {
  readonly profile: SimProfile;
  readonly outlets: number;
  readonly seed?: number;
  /** Seconds a reboot keeps an outlet off. Default 2. */
  readonly rebootSeconds?: number;
  /** Hold every value still (energy does not accrue). */
  readonly frozen?: boolean;
  /** Outlet names as raw bytes (not UTF-8, with control characters): the hostile mode. */
  readonly badNames?: boolean;
  /** Epoch ms, default Date.now (a unit in a fleet of loads takes the fleet's). */
  readonly clock?: () => number;
  /**
   * false: a model without outlet switching (default true): an APC rPDU2 unit serves only its
   * metered outlet table (an AP88xx), an APC rPDU unit no outlet table at all (an AP7853), a
   * Raritan PX2 no switch table (a PXE: its outlets' onOff sensors still tell their state), an
   * Eaton unit no outletControlTable, a Sentry3 tower outlets without the powerControl capability,
   * a CyberPower unit only its metered outlet tables. The other profiles ignore it.
   */
  readonly switched?: boolean;
}

export class SimUnit {
  readonly profile: SimProfile;
  readonly outlets: OutletState[];
  readonly #rebootMs: number;
  readonly #frozen: boolean;
  readonly #badNames: boolean;
  readonly #switched: boolean;
  readonly clock: () => number;
  #last: number;
  /** In a fleet of loads: its currents are exact sums, rounded once where served. */
  #exact = false;

  constructor(o: UnitOptions) {
    this.profile = o.profile;
    this.clock = o.clock ?? Date.now;
    this.#last = this.clock();
    this.#rebootMs = (o.rebootSeconds ?? 2) * 1000;
    this.#frozen = o.frozen === true;
    this.#badNames = o.badNames === true;
    this.#switched = o.switched !== false;
    const r = random(hash32(o.seed ?? 1, SIM_PROFILES.indexOf(o.profile)));
    const count = o.outlets * familyChain(o.profile);
    this.outlets = Array.from({ length: count }, (_, i) => {
      const tenths = i < BASE_TENTHS.length ? (BASE_TENTHS[i] ?? 0) : Math.round(r() * 30);
      return {
        on: i < BASE_ON.length ? (BASE_ON[i] ?? true) : r() > 0.2,
        name: this.defaultName(i + 1, count),
        wave: new Wave(tenths / 10, r, [0.08, 0.04], o.frozen === true || tenths === 0),
        energyWh: 1000 + (i + 1) * 37,
        truthWh: 1000 + (i + 1) * 37,
        backOnAt: null,
        socket: null,
        socketWh: 0,
        unpowered: false,
      };
    });
  }

  /** Plugs every outlet into the fleet's sockets (`socket(i)` for 0-based outlet i). */
  attach(socket: (i: number) => SnmpSocket): void {
    const now = this.clock();
    this.tick(now);
    this.outlets.forEach((o, i) => {
      o.socket = socket(i);
      o.socketWh = o.socket.energyWh(now);
    });
    this.#exact = true;
  }

  /** Whether outlet i's (0-based) relay is on at `t` (at or after its last switch). */
  relayOn(i: number, t: number): boolean {
    const o = this.outlets[i];
    return o !== undefined && (o.on || (o.backOnAt !== null && t >= o.backOnAt));
  }

  /** When outlet i's relay is scheduled to switch after `t` (a reboot's end). */
  relayChanges(i: number, t: number): number[] {
    const at = this.outlets[i]?.backOnAt ?? null;
    return at !== null && at > t ? [at] : [];
  }

  /** The name outlet n of `count` has until one is written. */
  defaultName(n: number, count = this.outlets.length): string {
    switch (this.profile) {
      case "apc-rpdu2":
        return n === 3 ? "db-01" : `Outlet ${n}`;
      case "apc-rpdu":
        return n === 2 ? "switch-core" : `Outlet ${n}`;
      case "raritan-px2":
        return n === 5 ? "nas-01" : "";
      case "raritan-px":
        return n === 4 ? "fw-01" : `Outlet ${n}`;
      case "servertech-sentry4":
        return n === 6 ? "backup-01" : `Master_Outlet_${n}`;
      default:
        return familyDefaultName(this.profile, n, count);
    }
  }

  /** Advances time: energy accrues, reboots finish. */
  tick(now = this.clock()): void {
    const dt = now - this.#last;
    this.#last = now;
    for (const o of this.outlets) {
      if (o.backOnAt !== null && now >= o.backOnAt) {
        o.on = true;
        o.backOnAt = null;
      }
      if (o.socket !== null) {
        const total = o.socket.energyWh(now);
        const wh = o.unpowered ? 0 : Math.max(0, total - o.socketWh);
        o.energyWh += wh;
        o.truthWh += wh;
        o.socketWh = total;
      } else if (!this.#frozen && o.on && !o.unpowered && dt > 0) {
        const wh = (this.amps(o, now) * UNIT_VOLTS * dt) / 3_600_000;
        o.energyWh += wh;
        o.truthWh += wh;
      }
    }
  }

  amps(o: OutletState, now = this.clock()): number {
    if (o.unpowered) return 0;
    if (o.socket !== null) return o.socket.watts(now) / (UNIT_VOLTS * o.socket.powerFactor());
    return o.on ? Math.max(0, o.wave.at(now)) : 0;
  }

  switch(outlet: number, action: "on" | "off" | "reboot"): void {
    const o = this.outlets[outlet - 1];
    if (o === undefined) return;
    const now = this.clock();
    o.socket?.switching(now);
    this.tick(now);
    if (action === "reboot") {
      o.on = false;
      o.backOnAt = now + this.#rebootMs;
    } else {
      o.on = action === "on";
      o.backOnAt = null;
    }
    o.socket?.switched(now);
  }

  /** The banks (1-based, as {@link bankOf}) whose breaker has tripped, and whether the unit reports it. */
  readonly trips = new Map<number, "silent" | "reported">();

  /**
   * Trips bank `bank`'s breaker (1-based, the outlets {@link bankOf} puts on it): the bank's
   * current and its outlets' currents fall to 0 while the outlets stay on. `silent`: nothing
   * reports it (as an APC unit); `reported`: a profile that reads a breaker's trip state serves it
   * tripped (a Raritan PX2's trip sensor reads open); null resets it.
   */
  tripBank(bank: number, mode: "silent" | "reported" | null): void {
    this.tick();
    if (mode === null) this.trips.delete(bank);
    else this.trips.set(bank, mode);
    this.outlets.forEach((o, i) => {
      if (this.bankOf(i) === bank) o.unpowered = mode !== null;
    });
  }

  rename(outlet: number, name: string): void {
    const o = this.outlets[outlet - 1];
    if (o !== undefined) o.name = name;
  }

  resetEnergy(outlet: number): void {
    this.tick();
    const o = this.outlets[outlet - 1];
    if (o !== undefined) o.energyWh = 0;
  }

  /** Sets an outlet's counter (Wh), as a unit that has counted this far would read (near 2^32: it wraps soon). */
  setEnergy(outlet: number, wh: number): void {
    this.tick();
    const o = this.outlets[outlet - 1];
    if (o !== undefined) o.energyWh = wh;
  }

  /** An outlet's ground truth (Wh): its first counter reading plus everything drawn since, whatever happened. */
  truthWh(outlet: number): number {
    this.tick();
    return this.outlets[outlet - 1]?.truthWh ?? NaN;
  }

  /** Units put in this one's place so far: a replaced unit reports another serial and counts from 0. */
  generation = 0;

  /** Replaces the unit by a new one of the same model: another serial, every energy counter at 0. */
  replace(): void {
    this.tick();
    this.generation++;
    for (const o of this.outlets) o.energyWh = 0;
  }

  /** An outlet's name as served: text, or raw bytes in the hostile mode. */
  #name(i: number, text: string): SimValue {
    if (!this.#badNames) return text;
    return Buffer.concat([
      Buffer.from([0xff, 0xfe, 0x1b, 0x00]),
      Buffer.from(`x${i}`),
      Buffer.from([0xc3, 0x28, 0x7f]),
    ]);
  }

  content(now = this.clock()): SimContent {
    this.tick(now);
    switch (this.profile) {
      case "apc-rpdu2":
        return this.#apcRpdu2(now);
      case "apc-rpdu":
        return this.#apcRpdu(now);
      case "raritan-px2":
        return this.#raritanPx2(now);
      case "raritan-px":
        return this.#raritanPx(now);
      case "servertech-sentry4":
        return this.#sentry4(now);
      default:
        return familyContent(this.profile, this.view(now));
    }
  }

  /** The unit as the families in files of their own (./families.ts) read it. */
  view(now: number): FamilyView {
    return {
      outlets: this.outlets,
      switched: this.#switched,
      tenths: (i) => this.#tenths(i, now),
      totalTenths: () => this.#totalTenths(now),
      generation: this.generation,
      name: (k, text) => this.#name(k, text),
      system: (descr, objectId, name) => this.#system(descr, objectId, name),
    };
  }

  #tenths(i: number, now: number): number {
    const o = this.outlets[i];
    return o === undefined ? 0 : Math.round(this.amps(o, now) * 10);
  }

  #totalTenths(now: number): number {
    return this.#sum(() => true, 10, now);
  }

  /**
   * The current of the outlets `which` selects in 1/`per` amps: in a fleet the exact sum rounded
   * once (as a PDU measures it), else the sum of each outlet's tenths (the recordings' figures).
   */
  #sum(which: (i: number) => boolean, per: number, now: number): number {
    let sum = 0;
    this.outlets.forEach((o, i) => {
      if (!which(i)) return;
      sum += this.#exact ? this.amps(o, now) : this.#tenths(i, now);
    });
    return this.#exact ? Math.round(sum * per) : (sum * per) / 10;
  }

  /** Outlet i's current in 1/`per` amps (in a fleet rounded from the exact figure). */
  #current(i: number, per: number, now: number): number {
    const o = this.outlets[i];
    if (o === undefined) return 0;
    return this.#exact ? Math.round(this.amps(o, now) * per) : (this.#tenths(i, now) * per) / 10;
  }

  /** Outlet i's watts: in a fleet what its load draws, else its tenths × 23 (the recordings' figure). */
  #watts(i: number, now: number): number {
    const o = this.outlets[i];
    if (o === undefined) return 0;
    return o.socket !== null ? Math.round(o.socket.watts(now)) : this.#tenths(i, now) * 23;
  }

  /** Outlet i's volt-amperes, as {@link #watts}. */
  #va(i: number, now: number): number {
    const o = this.outlets[i];
    if (o === undefined) return 0;
    return o.socket !== null
      ? Math.round(o.socket.watts(now) / o.socket.powerFactor())
      : this.#tenths(i, now) * 25;
  }

  /** The volt-amperes of the outlets `which` selects. */
  #sumVa(which: (i: number) => boolean, now: number): number {
    let sum = 0;
    this.outlets.forEach((o, i) => {
      if (!which(i)) return;
      sum += o.socket !== null ? o.socket.watts(now) / o.socket.powerFactor() : this.#tenths(i, now) * 25;
    });
    return Math.round(sum);
  }

  /** The watts of the outlets `which` selects. */
  #sumWatts(which: (i: number) => boolean, now: number): number {
    let sum = 0;
    this.outlets.forEach((o, i) => {
      if (which(i)) sum += o.socket !== null ? o.socket.watts(now) : this.#tenths(i, now) * 23;
    });
    return Math.round(sum);
  }

  /** The bank (1-based) of outlet i: the first half of the outlets on bank 1, the rest on bank 2. */
  bankOf(i: number): number {
    return i < Math.ceil(this.outlets.length / 2) ? 1 : 2;
  }

  /** The currents the unit serves for its entities, by the bridge's entity keys (amps). */
  entityAmps(now = this.clock()): { key: string; amps: number }[] {
    const all = () => true;
    switch (this.profile) {
      case "apc-rpdu2":
        return [
          { key: "phase0", amps: this.#sum(all, 10, now) / 10 },
          { key: "bank0", amps: this.#sum((i) => this.bankOf(i) === 1, 10, now) / 10 },
          { key: "bank1", amps: this.#sum((i) => this.bankOf(i) === 2, 10, now) / 10 },
        ];
      case "raritan-px2":
        return [
          { key: "inlet0", amps: this.#sum(all, 1000, now) / 1000 },
          { key: "breaker0", amps: this.#sum((i) => this.bankOf(i) === 1, 100, now) / 100 },
          { key: "breaker1", amps: this.#sum((i) => this.bankOf(i) === 2, 100, now) / 100 },
        ];
      case "servertech-sentry4":
        return [0, 1, 2].flatMap((l) => {
          const amps = this.#sum((i) => i % 3 === l, 100, now) / 100;
          return [
            { key: `line${l}`, amps },
            { key: `phase${l}`, amps },
          ];
        });
      default:
        return [{ key: "total", amps: this.#sum(all, 10, now) / 10 }];
    }
  }

  #system(descr: string, objectId: string, name: string): SimScalar[] {
    return [
      { oid: "1.3.6.1.2.1.1.1.0", type: S, value: descr },
      { oid: "1.3.6.1.2.1.1.2.0", type: "OID", value: objectId },
      { oid: "1.3.6.1.2.1.1.3.0", type: "TimeTicks", value: 123456789 },
      { oid: "1.3.6.1.2.1.1.5.0", type: S, value: name },
    ];
  }

  #apcRpdu2(now: number): SimContent {
    const R = "1.3.6.1.4.1.318.1.1.26";
    const n = this.outlets.length;
    const tot = this.#totalTenths(now);
    const scalars = [
      ...this.#system(
        "APC Web/SNMP Management Card (MB:v4.1.0 PF:v6.8.2 PN:apc_hw05_aos_682.bin AF1:v6.8.2 AN1:apc_hw05_rpdu2g_682.bin MN:AP8858 HR:02 SN: 3F1734A01234 MD:08/22/2017)",
        "1.3.6.1.4.1.318.1.3.4.6",
        "rack-pdu-b",
      ),
      { oid: `${R}.1.0`, type: I, value: 1 } as SimScalar,
    ];
    const { ident, props } = this.#apcRpdu2Unit(R, n);
    const watts = this.#sumWatts(() => true, now);
    const va = this.#sumVa(() => true, now);
    const status = new TableBuilder(`${R}.4.3.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, I, 1],
        [3, S, "rack-pdu-b"],
        [4, I, tot > 140 ? 3 : 2],
        [5, I, Math.round(watts / 10)],
        [6, I, 240],
        [7, S, "10/02/2025 13:10:44"],
        [8, S, "01/01/2025 00:00:01"],
        [9, I, Math.round(this.outlets.reduce((s, o) => s + o.energyWh, 0) / 100) + 40000],
        [10, S, "01/01/2025 00:00:01"],
        [11, I, 2],
        [12, I, 1],
        [13, I, 1],
        [14, I, 3],
        [15, S, "01/01/2025 00:00:01"],
        [16, I, Math.round(va / 10)],
        [17, I, 95],
        [18, I, 1],
      ],
    );
    const { phaseProps, phase } = this.#apcRpdu2Phase(R, tot, watts, va);
    const banks = this.#apcRpdu2Banks(R, now);
    const { config, sprops, sstatus, control, mprops, metered } = this.#apcRpdu2Outlets(R, now);
    const sensor = new TableBuilder(`${R}.10.2.2.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, I, 1],
        [3, S, "Inlet air"],
        [4, I, 1],
        [5, I, 2],
        [6, I, 2],
        [7, I, 752],
        [8, I, 244],
        [9, I, 4],
        [10, I, 41],
        [11, I, 4],
      ],
    );
    return {
      scalars,
      tables: (this.#switched
        ? [
            ident,
            props,
            status,
            phaseProps,
            phase,
            banks,
            config,
            sprops,
            sstatus,
            control,
            mprops,
            metered,
            sensor,
          ]
        : [ident, props, status, phaseProps, phase, banks, mprops, metered, sensor]
      ).map((t) => t.done()),
    };
  }
  /** The two banks' readings (rPDU2BankStatusTable): the first half of the outlets on bank 1. */
  #apcRpdu2Banks(R: string, now: number) {
    const banks = new TableBuilder(`${R}.8.3.1`, 1);
    for (const b of [1, 2]) {
      const current = this.#sum((i) => this.bankOf(i) === b, 10, now);
      banks.row(
        [b],
        [
          [1, I, b],
          [2, I, 1],
          [3, I, b],
          [4, I, current > 140 ? 3 : 2],
          [5, I, current],
          [6, I, current],
          [7, S, "10/02/2025 13:10:44"],
          [8, S, "01/01/2025 00:00:01"],
        ],
      );
    }
    return banks;
  }

  /** The single phase's properties and readings. */
  #apcRpdu2Phase(R: string, tot: number, watts: number, va: number) {
    const phaseProps = new TableBuilder(`${R}.6.2.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, I, 1],
        [3, I, 1],
      ],
    );
    const phase = new TableBuilder(`${R}.6.3.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, I, 1],
        [3, I, 1],
        [4, I, 2],
        [5, I, tot],
        [6, I, 231],
        [7, I, Math.round(watts / 10)],
        [8, I, Math.round(va / 10)],
        [9, I, 95],
        [10, I, 95],
        [11, S, "10/02/2025 13:10:44"],
        [12, S, "01/01/2025 00:00:01"],
      ],
    );
    return { phaseProps, phase };
  }

  /** The switched and metered outlet properties tables (each with the outlet's bank). */
  #apcRpdu2Properties(R: string) {
    const sprops = new TableBuilder(`${R}.9.2.2.1`, 1);
    const mprops = new TableBuilder(`${R}.9.4.2.1`, 1);
    this.outlets.forEach((o, i) => {
      const k = i + 1;
      const name = this.#name(k, o.name);
      const bank = this.bankOf(i);
      // seqPhase1ToNeutral(1): the unit's one phase
      sprops.row(
        [k],
        [
          [1, I, k],
          [2, I, 1],
          [3, S, name],
          [4, I, k],
          [5, I, 1],
          [6, I, bank],
        ],
        k,
      );
      mprops.row(
        [k],
        [
          [1, I, k],
          [2, I, 1],
          [3, S, name],
          [4, I, k],
          [5, I, 1],
          [6, I, 2300],
          [7, I, bank],
        ],
        k,
      );
    });
    return { sprops, mprops };
  }

  /**
   * The outlet tables: configuration, switched properties, switched status, control, metered
   * properties and metered readings.
   */
  #apcRpdu2Outlets(R: string, now: number) {
    const config = new TableBuilder(`${R}.9.2.1.1`, 1);
    const sstatus = new TableBuilder(`${R}.9.2.3.1`, 1);
    const control = new TableBuilder(`${R}.9.2.4.1`, 1);
    const metered = new TableBuilder(`${R}.9.4.3.1`, 1);
    const { sprops, mprops } = this.#apcRpdu2Properties(R);
    this.outlets.forEach((o, i) => {
      const k = i + 1;
      const name = this.#name(k, o.name);
      const c = this.#tenths(i, now);
      config.row(
        [k],
        [
          [1, I, k],
          [2, I, 1],
          [3, S, name, "name"],
          [4, I, k],
          [5, I, 0, "plain"],
          [6, I, 0, "plain"],
          [7, I, 5, "plain"],
          [8, S, "https://www.apc.com", "plain"],
        ],
        k,
      );
      sstatus.row(
        [k],
        [
          [1, I, k],
          [2, I, 1],
          [3, S, name],
          [4, I, k],
          [5, I, o.on ? 2 : 1],
          [6, I, 2],
          [7, S, "https://www.apc.com"],
        ],
        k,
      );
      control.row(
        [k],
        [
          [1, I, k],
          [2, I, 1],
          [3, S, name],
          [4, I, k],
          [5, I, o.on ? 1 : 2, "control"],
        ],
        k,
      );
      metered.row(
        [k],
        [
          [1, I, k],
          [2, I, 1],
          [3, S, name],
          [4, I, k],
          [5, I, c === 0 ? 1 : c > 25 ? 4 : 2],
          [6, I, c],
          [7, I, this.#watts(i, now)],
          [8, I, c * 25],
          [9, S, "10/02/2025 13:10:44"],
          [10, S, "01/01/2025 00:00:01"],
          [11, I, Math.round(o.energyWh / 100)],
          [12, S, "C13"],
          [13, S, "https://www.apc.com"],
        ],
        k,
      );
    });
    return { config, sprops, sstatus, control, mprops, metered };
  }

  /** The identification and properties rows of the unit. */
  #apcRpdu2Unit(R: string, n: number) {
    const ident = new TableBuilder(`${R}.2.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, I, 1],
        [3, S, "rack-pdu-b"],
        [4, S, "Row B Rack 4"],
        [5, S, "02"],
        [6, S, "v6.8.2"],
        [7, S, "08/22/2017"],
        [8, S, "AP8858"],
        [9, S, "3F1734A01234"],
        [10, S, "ops"],
        [11, S, "v1.1.0.3"],
        [12, S, "Rack PDU 2G, Metered by Outlet with Switching, ZeroU, 16A, 230V, (21) C13 & (3) C19"],
      ],
    );
    const props = new TableBuilder(`${R}.4.2.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, I, 1],
        [3, S, "rack-pdu-b"],
        [4, I, n],
        [5, I, n],
        [6, I, n],
        [7, I, 1],
        [8, I, 0],
        [9, I, 16],
        [10, I, 2],
        [11, I, 1],
        [12, I, 16],
        [13, I, 37],
      ],
    );
    return { ident, props };
  }

  #apcRpdu(now: number): SimContent {
    const R = "1.3.6.1.4.1.318.1.1.12";
    const n = this.outlets.length;
    const scalars: SimScalar[] = [
      ...this.#system(
        "APC Web/SNMP Management Card (MB:v3.9.2 PF:v3.9.4 PN:apc_hw05_aos_394.bin AF1:v3.9.4 AN1:apc_hw05_rpdu_394.bin MN:AP7920 HR:B2 SN: ZA1012345678 MD:03/15/2010)",
        "1.3.6.1.4.1.318.1.3.4.5",
        "rack-pdu-a",
      ),
      { oid: `${R}.1.1.0`, type: S, value: "rack-pdu-a" },
      { oid: `${R}.1.2.0`, type: S, value: "B2" },
      { oid: `${R}.1.3.0`, type: S, value: "v3.9.4" },
      { oid: `${R}.1.4.0`, type: S, value: "03/15/2010" },
      { oid: `${R}.1.5.0`, type: S, value: "AP7920" },
      { oid: `${R}.1.6.0`, type: S, value: "ZA1012345678" },
      { oid: `${R}.1.7.0`, type: I, value: 10 },
      { oid: `${R}.1.8.0`, type: I, value: n },
      { oid: `${R}.1.9.0`, type: I, value: 1 },
      { oid: `${R}.2.1.1.0`, type: I, value: 10 },
      { oid: `${R}.2.1.2.0`, type: I, value: 1 },
      { oid: `${R}.2.1.4.0`, type: I, value: 1 },
      { oid: `${R}.3.1.1.0`, type: I, value: n },
      { oid: `${R}.3.1.4.0`, type: I, value: n },
    ];
    const tot = this.#totalTenths(now);
    const load = new TableBuilder(`${R}.2.3.1.1`, 1).row(
      [1],
      [
        [1, I, 1],
        [2, G, tot],
        [3, I, tot > 80 ? 3 : 1],
        [4, I, 1],
        [5, I, 0],
      ],
    );
    const control = new TableBuilder(`${R}.3.3.1.1`, 1);
    const config = new TableBuilder(`${R}.3.4.1.1`, 1);
    const status = new TableBuilder(`${R}.3.5.1.1`, 1);
    this.outlets.forEach((o, i) => {
      const k = i + 1;
      const name = this.#name(k, o.name);
      control.row(
        [k],
        [
          [1, I, k],
          [2, S, name],
          [3, I, 1],
          [4, I, o.on ? 1 : 2, "control"],
        ],
        k,
      );
      config.row(
        [k],
        [
          [1, I, k],
          [2, S, name, "name"],
          [3, I, 1],
          [4, I, 0, "plain"],
          [5, I, 0, "plain"],
          [6, I, 5, "plain"],
        ],
        k,
      );
      status.row(
        [k],
        [
          [1, I, k],
          [2, S, name],
          [3, I, 1],
          [4, I, o.on ? 1 : 2],
          [5, I, 2],
        ],
        k,
      );
    });
    return {
      scalars,
      tables: (this.#switched ? [load, control, config, status] : [load]).map((t) => t.done()),
    };
  }

  #raritanPx2(now: number): SimContent {
    const P = "1.3.6.1.4.1.13742.6";
    const n = this.outlets.length;
    const scalars: SimScalar[] = [
      ...this.#system("PX2 020100 - Raritan PX2-1486", "1.3.6.1.4.1.13742.6", "px2-rack-c"),
      { oid: `${P}.3.1.0`, type: I, value: 1 },
    ];
    const units = { 1: 2, 4: 1, 5: 3, 6: 4, 7: -1, 8: 5 } as Readonly<Record<number, number>>;
    const nameplate = new TableBuilder(`${P}.3.2.1.1`, 1).row(
      [1],
      [
        [2, S, "Raritan"],
        [3, S, "PX2-1486"],
        [4, S, "PKE0954001"],
        [5, S, "200-240V"],
        [6, S, "16A"],
        [7, S, "50/60Hz"],
        [8, S, "3.7-3.8kVA"],
      ],
    );
    const unit = new TableBuilder(`${P}.3.2.2.1`, 1).row(
      [1],
      [
        [2, I, 1],
        [3, I, 0],
        [4, I, n],
        [11, S, Buffer.from("000d5d0a1b2c", "hex")],
        [13, S, "px2-rack-c"],
      ],
    );
    const boards = new TableBuilder(`${P}.3.2.3.1`, 3)
      .row(
        [1, 1, 1],
        [
          [4, S, "0x3F"],
          [6, S, "3.5.0.5-47173"],
        ],
      )
      .row(
        [1, 3, 1],
        [
          [4, S, "0x21"],
          [6, S, "0xcb"],
        ],
      );
    const tot = this.#totalTenths(now);
    const { inletCfg, inletSensorCfg, inletMeas } = this.#raritanPx2Inlet(P, units, tot, now);
    const { ocpCfg, ocpSensorCfg, ocpMeas } = this.#raritanPx2Ocp(P, now);
    const { outletCfg, outletSensorCfg, outletMeas, switchCtl, sensorCtl } = this.#raritanPx2Outlets(
      P,
      units,
      now,
    );
    return {
      scalars,
      tables: [
        nameplate,
        unit,
        boards,
        inletCfg,
        inletSensorCfg,
        ocpCfg,
        ocpSensorCfg,
        outletCfg,
        outletSensorCfg,
        ...(this.#switched ? [switchCtl] : []),
        sensorCtl,
        inletMeas,
        ocpMeas,
        outletMeas,
      ].map((t) => t.done()),
    };
  }
  /** The outlets: configuration, sensors, switching and the energy reset. */
  #raritanPx2Outlets(P: string, units: Readonly<Record<number, number>>, now: number) {
    const outletCfg = new TableBuilder(`${P}.3.5.3.1`, 2);
    const outletSensorCfg = new TableBuilder(`${P}.3.5.4.1`, 3);
    const outletMeas = new TableBuilder(`${P}.5.4.3.1`, 3);
    const switchCtl = new TableBuilder(`${P}.4.1.2.1`, 2);
    const sensorCtl = new TableBuilder(`${P}.4.7.1.1`, 3);
    this.outlets.forEach((o, i) => {
      const k = i + 1;
      const c = this.#tenths(i, now);
      outletCfg.row(
        [1, k],
        [
          [2, S, String(k)],
          [3, S, this.#name(k, o.name), "name"],
          [4, S, "IEC 60320 C13"],
          [7, S, "10A"],
          [28, I, 1],
          // outletPowerSource: the overCurrentProtectorLabel of the breaker it hangs on
          [33, "OID", `${P}.3.4.3.1.2.1.${this.bankOf(i)}`],
        ],
        k,
      );
      const vals: Readonly<Record<number, readonly [number, number]>> = {
        1: [this.#current(i, 1000, now), 3],
        4: [230, 0],
        5: [this.#watts(i, now), 0],
        6: [this.#va(i, now), 0],
        7: [c === 0 ? 0 : 92, 2],
        8: [Math.round(o.energyWh), 0],
      };
      for (const [st, [v, d]] of Object.entries(vals).map(([key, x]) => [Number(key), x] as const)) {
        outletSensorCfg.row(
          [1, k, st],
          [
            [6, I, units[st] ?? 0],
            [7, G, d],
          ],
          k,
        );
        // A switched-off outlet's power factor is unavailable(-1), as real units report it.
        const state = st === 7 && !o.on ? -1 : st === 1 && c > 25 ? 5 : 4;
        outletMeas.row(
          [1, k, st],
          [
            [2, I, 1],
            [3, I, state],
            [4, G, v],
            [5, G, 1759400000],
            [6, I, v],
          ],
          k,
        );
      }
      outletMeas.row(
        [1, k, 14],
        [
          [2, I, 1],
          [3, I, o.on ? 7 : 8],
          [5, G, 1759400000],
        ],
        k,
      );
      switchCtl.row(
        [1, k],
        [
          [2, I, o.on ? 1 : 0, "control"],
          [3, I, o.on ? 7 : 8],
          [4, G, 1759300000],
        ],
        k,
      );
      sensorCtl.row([1, k, 8], [[1, I, 0, "reset"]], k);
    });
    return { outletCfg, outletSensorCfg, outletMeas, switchCtl, sensorCtl };
  }

  /** The two breakers, each carrying half of the outlets. */
  #raritanPx2Ocp(P: string, now: number) {
    const ocpCfg = new TableBuilder(`${P}.3.4.3.1`, 2);
    const ocpSensorCfg = new TableBuilder(`${P}.3.4.4.1`, 3);
    const ocpMeas = new TableBuilder(`${P}.5.3.3.1`, 3);
    for (const b of [1, 2]) {
      ocpCfg.row(
        [1, b],
        [
          [2, S, `C${b}`],
          [3, S, ""],
          [5, S, "16A"],
        ],
      );
      ocpSensorCfg.row(
        [1, b, 1],
        [
          [6, I, 2],
          [7, G, 2],
        ],
      );
      const bc = this.#sum((i) => this.bankOf(i) === b, 100, now);
      ocpMeas.row(
        [1, b, 1],
        [
          [2, I, 1],
          [3, I, 4],
          [4, G, bc],
          [6, I, bc],
        ],
      );
      // The trip sensor: closed(1), or open(0) once the breaker has tripped and the unit says so.
      ocpMeas.row(
        [1, b, 15],
        [
          [2, I, 1],
          [3, I, this.trips.get(b) === "reported" ? 0 : 1],
        ],
      );
    }
    return { ocpCfg, ocpSensorCfg, ocpMeas };
  }

  /** The inlet and its sensors (current, voltage, power, apparent power, power factor, energy). */
  #raritanPx2Inlet(P: string, units: Readonly<Record<number, number>>, tot: number, now: number) {
    const inletCfg = new TableBuilder(`${P}.3.3.3.1`, 2).row(
      [1, 1],
      [
        [2, S, "I1"],
        [3, S, ""],
        [4, S, "IEC 60320 C20"],
        [6, S, "200-240V"],
        [7, S, "16A"],
      ],
    );
    const inletSensorCfg = new TableBuilder(`${P}.3.3.4.1`, 3);
    const inletMeas = new TableBuilder(`${P}.5.2.3.1`, 3);
    const energyWh = Math.round(this.outlets.reduce((s, o) => s + o.energyWh, 0)) + 1_200_000;
    const inlet: Readonly<Record<number, readonly [number, number, number]>> = {
      1: [this.#sum(() => true, 1000, now), 3, tot > 60 ? 5 : 4],
      4: [230, 0, 4],
      5: [this.#sumWatts(() => true, now), 0, 4],
      6: [this.#sumVa(() => true, now), 0, 4],
      7: [92, 2, 4],
      8: [energyWh, 0, 4],
    };
    for (const [st, [v, d, state]] of Object.entries(inlet).map(([k, x]) => [Number(k), x] as const)) {
      inletSensorCfg.row(
        [1, 1, st],
        [
          [6, I, units[st] ?? 0],
          [7, G, d],
        ],
      );
      inletMeas.row(
        [1, 1, st],
        [
          [2, I, 1],
          [3, I, state],
          [4, G, v],
          [5, G, 1759400000],
          [6, I, v],
        ],
      );
    }
    return { inletCfg, inletSensorCfg, inletMeas };
  }

  #raritanPx(now: number): SimContent {
    const P = "1.3.6.1.4.1.13742.4";
    const n = this.outlets.length;
    const tot = this.#totalTenths(now);
    const scalars: SimScalar[] = [
      ...this.#system(
        "Raritan Dominion PX - Firmware Version 010508-10880",
        "1.3.6.1.4.1.13742.4",
        "px-rack-d",
      ),
      { oid: `${P}.1.1.1.0`, type: S, value: "1.5.8.10880" },
      { oid: `${P}.1.1.2.0`, type: S, value: "PKL8A00123" },
      { oid: `${P}.1.1.3.0`, type: "IpAddress", value: "10.0.0.14" },
      { oid: `${P}.1.1.6.0`, type: S, value: Buffer.from("000d5d012345", "hex") },
      { oid: `${P}.1.1.7.0`, type: I, value: 4 },
      { oid: `${P}.1.1.25.0`, type: G, value: 15000 },
      { oid: `${P}.1.1.26.0`, type: S, value: "100-120V" },
      { oid: `${P}.1.1.27.0`, type: S, value: "1.4-1.9kVA" },
      { oid: `${P}.1.1.28.0`, type: S, value: "enabled" },
      { oid: `${P}.1.1.32.0`, type: S, value: "Yes" },
      { oid: `${P}.1.2.1.0`, type: I, value: n },
      { oid: `${P}.1.5.1.0`, type: I, value: 1 },
      { oid: `${P}.1.20.1.0`, type: I, value: 1 },
    ];
    const outlets = new TableBuilder(`${P}.1.2.2.1`, 1);
    this.outlets.forEach((o, i) => {
      const k = i + 1;
      const c = this.#tenths(i, now);
      outlets.row(
        [k],
        [
          [2, S, this.#name(k, o.name), "name"],
          [3, I, o.on ? 1 : 0, "control"],
          [4, G, c * 100],
          [5, G, c * 120],
          [6, G, 120100],
          [7, G, c * 12],
          [8, G, c * 13],
          [9, G, c === 0 ? 0 : 92],
          [30, G, 12000],
          [31, G, Math.round(o.energyWh) + 49000],
        ],
        k,
      );
    });
    const breakers = new TableBuilder(`${P}.1.5.2.1`, 1).row(
      [1],
      [
        [2, S, "CB1"],
        [3, I, 0],
        [4, G, 15000],
        [5, G, tot * 100],
        [7, G, 12000],
        [9, G, 14000],
        [10, G, 500],
      ],
    );
    const inlets = new TableBuilder(`${P}.1.20.2.1`, 1).row(
      [1],
      [
        [3, I, 1],
        [4, G, 15000],
        [7, G, tot * 100],
        [8, G, 120100],
        [9, G, tot * 12],
        [10, G, tot * 13],
        [11, G, 92],
        [12, G, Math.round(this.outlets.reduce((s, o) => s + o.energyWh, 0)) + 980000],
      ],
    );
    return { scalars, tables: [outlets, breakers, inlets].map((t) => t.done()) };
  }

  #sentry4(now: number): SimContent {
    const T = "1.3.6.1.4.1.1718.4.1";
    const scalars: SimScalar[] = [
      ...this.#system("Sentry Switched PDU", "1.3.6.1.4.1.1718.4", "sentry-rack-e"),
      { oid: `${T}.1.1.1.0`, type: S, value: "Sentry Switched PDU" },
      { oid: `${T}.1.1.3.0`, type: S, value: "Version 8.0q" },
      { oid: `${T}.1.1.21.0`, type: I, value: 1 },
    ];
    const unitCfg = new TableBuilder(`${T}.2.2.1`, 1).row(
      [1],
      [
        [2, S, "A"],
        [3, S, "Master"],
        [4, S, "ABEF0001234"],
        [5, S, "C2W24XE-DQME2M66/C"],
        [7, I, 0],
      ],
    );
    const unitMon = new TableBuilder(`${T}.2.3.1`, 1).row([1], [[1, I, 0]]);
    const cordCfg = new TableBuilder(`${T}.3.2.1`, 2).row(
      [1, 1],
      [
        [2, S, "AA"],
        [3, S, "Master_Cord_A"],
        [10, I, 30],
      ],
    );
    const cordMon = new TableBuilder(`${T}.3.3.1`, 2).row(
      [1, 1],
      [
        [1, I, 1],
        [2, I, 0],
        [3, I, this.#sumWatts(() => true, now)],
        [4, I, 0],
        [5, I, this.#sumVa(() => true, now)],
        [8, I, 92],
        [10, I, Math.round(this.outlets.reduce((s, o) => s + o.energyWh, 0) / 100) + 23000],
      ],
    );
    const { lineCfg, lineMon, phaseCfg, phaseMon } = this.#sentry4Lines(T, now);
    const ocpCfg = new TableBuilder(`${T}.6.2.1`, 3);
    const ocpMon = new TableBuilder(`${T}.6.3.1`, 3);
    for (const b of [1, 2, 3]) {
      ocpCfg.row(
        [1, 1, b],
        [
          [2, S, `AA${b}`],
          [4, S, `BR${b}`],
          [6, I, 1],
          [7, I, 20],
        ],
      );
      ocpMon.row([1, 1, b], [[1, I, 0]]);
    }
    const { outletCfg, outletMon, outletCtl } = this.#sentry4Outlets(T, now);
    return {
      scalars,
      tables: [
        unitCfg,
        unitMon,
        cordCfg,
        cordMon,
        lineCfg,
        lineMon,
        phaseCfg,
        phaseMon,
        ocpCfg,
        ocpMon,
        outletCfg,
        outletMon,
        outletCtl,
      ].map((t) => t.done()),
    };
  }
  /** The outlets: configuration, monitoring and control. */
  #sentry4Outlets(T: string, now: number) {
    const outletCfg = new TableBuilder(`${T}.8.2.1`, 3);
    const outletMon = new TableBuilder(`${T}.8.3.1`, 3);
    const outletCtl = new TableBuilder(`${T}.8.5.1`, 3);
    this.outlets.forEach((o, i) => {
      const k = i + 1;
      const c = this.#tenths(i, now);
      // Outlet k hangs on phase and over-current protector (k - 1) mod 3 + 1 (their IDs).
      outletCfg.row(
        [1, 1, k],
        [
          [2, S, `AA${k}`],
          [3, S, this.#name(k, o.name), "name"],
          [7, I, 10],
          [30, S, `AAN${(i % 3) + 1}`],
          [31, S, `AA${(i % 3) + 1}`],
        ],
        k,
      );
      outletMon.row(
        [1, 1, k],
        [
          [1, I, o.on ? 1 : 2],
          [2, I, c > 25 ? 16 : 0],
          [3, I, this.#current(i, 100, now)],
          [6, I, 2301],
          [7, I, this.#watts(i, now)],
          [9, I, this.#va(i, now)],
          [10, I, c === 0 ? -1 : 92],
          [14, I, Math.round(o.energyWh) + 2000],
        ],
        k,
      );
      outletCtl.row(
        [1, 1, k],
        [
          [1, I, o.on ? 3 : 2],
          [2, I, 0, "control"],
          [3, I, 0],
        ],
        k,
      );
    });
    return { outletCfg, outletMon, outletCtl };
  }

  /** The three lines and phases, each carrying every third outlet. */
  #sentry4Lines(T: string, now: number) {
    const lineCfg = new TableBuilder(`${T}.4.2.1`, 3);
    const lineMon = new TableBuilder(`${T}.4.3.1`, 3);
    const phaseCfg = new TableBuilder(`${T}.5.2.1`, 3);
    const phaseMon = new TableBuilder(`${T}.5.3.1`, 3);
    for (const l of [1, 2, 3]) {
      const on = (i: number) => i % 3 === l - 1;
      const lc = this.#sum(on, 100, now);
      lineCfg.row(
        [1, 1, l],
        [
          [2, S, `AAL${l}`],
          [4, S, `L${l}`],
          [6, I, 30],
        ],
      );
      lineMon.row(
        [1, 1, l],
        [
          [1, I, 1],
          [2, I, 0],
          [3, I, lc],
          [4, I, 0],
        ],
      );
      phaseCfg.row(
        [1, 1, l],
        [
          [2, S, `AAN${l}`],
          [4, S, `L${l}-N`],
        ],
      );
      phaseMon.row(
        [1, 1, l],
        [
          [1, I, 1],
          [2, I, 0],
          [3, I, 2301],
          [6, I, lc],
          [8, I, this.#sumWatts(on, now)],
          [9, I, this.#sumVa(on, now)],
          [10, I, 99],
          [13, I, 7000 + l],
        ],
      );
    }
    return { lineCfg, lineMon, phaseCfg, phaseMon };
  }

  /**
   * What a control value written to an outlet's control column (`column`: its sub-identifier) means,
   * per the profile's MIB.
   */
  commandOf(value: number, column?: number): "on" | "off" | "reboot" | null {
    const table: Readonly<Partial<Record<SimProfile, Readonly<Record<number, "on" | "off" | "reboot">>>>> = {
      "apc-rpdu2": { 1: "on", 2: "off", 3: "reboot" },
      "apc-rpdu": { 1: "on", 2: "off", 3: "reboot" },
      "raritan-px2": { 1: "on", 0: "off", 2: "reboot" },
      "raritan-px": { 1: "on", 0: "off", 2: "reboot" },
      "servertech-sentry4": { 1: "on", 2: "off", 3: "reboot" },
    };
    const own = table[this.profile];
    return own === undefined ? familyCommand(this.profile, value, column) : (own[value] ?? null);
  }
}
