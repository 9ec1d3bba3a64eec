/**
 * ServerTech Sentry3 towers (CW-, CS- and the Switched/Smart CDUs before PRO1/PRO2), Sentry3-MIB
 * (1.3.6.1.4.1.1718.3). Up to four towers (A, B, ... by `towerIndex`) answer behind one address:
 * each tower is a device. Input feeds are indexed (tower, infeed), outlets (tower, infeed, outlet);
 * outlet numbers restart on each infeed (IDs AA1, AB1), so the model numbers an outlet
 * (infeed − 1) × 64 + outlet (`outletIndex` is at most 64): on a one-infeed tower that is its own
 * number.
 *
 * Units from the MIB's UNITS clauses: hundredths of amps, tenths of volts, watts, volt-amps,
 * hundredths of power factor, watt-hours for outlets, tenths of kWh for infeeds, kWh for towers;
 * a negative value is "not available" (absentBelow 0).
 */
import type { AlarmState, SnmpProfile } from "../profile.js";
import { states } from "./alarms.js";

const S3 = "1.3.6.1.4.1.1718.3";
const tower = "towerEntry";
const infeed = "infeedEntry";
const outlet = "outletEntry";

/** towerStatus: normal(0), noComm(1), fanFail(2), overTemp(3), nvmFail(4), outOfBalance(5). */
const TOWER_STATUS: Readonly<Record<number, AlarmState>> = {
  0: states.normal("normal"),
  1: states.warning("noComm"),
  2: states.alarm("fanFail"),
  3: states.alarm("overTemp"),
  4: states.warning("nvmFail"),
  5: states.warning("outOfBalance"),
};

/**
 * infeedLoadStatus, outletLoadStatus: normal(0), notOn(1), reading(2), loadLow(3), loadHigh(4),
 * overLoad(5), readError(6), noComm(7).
 */
const LOAD_STATUS: Readonly<Record<number, AlarmState>> = {
  0: states.normal("normal"),
  1: states.normal("notOn"),
  2: states.normal("reading"),
  3: states.warning("loadLow"),
  4: states.warning("loadHigh"),
  5: states.alarm("overLoad"),
  6: states.warning("readError"),
  7: states.warning("noComm"),
};

export const SERVERTECH_SENTRY3: SnmpProfile = {
  id: "servertech-sentry3",
  family: "ServerTech Sentry3",
  manufacturer: "ServerTech",
  mibs: ["Sentry3-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.1718."],
  probe: [outlet, tower],
  scalars: {
    [`${S3}.1.1.0`]: { name: "systemVersion", type: "OctetString" },
  },
  tables: [
    {
      name: tower, // towerTable
      oid: `${S3}.2.1.1`,
      index: ["towerIndex"],
      unit: { index: 0 },
      number: { constant: 1 },
      columns: {
        towerID: { id: 2, type: "OctetString" }, // SIZE(1): A, B, ...
        towerName: { id: 3, type: "OctetString" },
        towerStatus: { id: 4, type: "Integer" },
        towerProductSN: { id: 6, type: "OctetString" },
        towerModelNumber: { id: 7, type: "OctetString" },
        towerActivePower: { id: 11, type: "Integer" }, // Watts
        towerApparentPower: { id: 12, type: "Integer" }, // Volt-Amps
        towerPowerFactor: { id: 13, type: "Integer" }, // hundredths
        towerEnergy: { id: 14, type: "Integer" }, // Kilowatt-Hours
      },
    },
    {
      name: infeed, // infeedTable
      oid: `${S3}.2.2.1`,
      index: ["towerIndex", "infeedIndex"],
      unit: { index: 0 },
      number: { index: 1 },
      columns: {
        infeedID: { id: 2, type: "OctetString" }, // SIZE(2): AA, AB, ...
        infeedName: { id: 3, type: "OctetString" },
        infeedLoadStatus: { id: 6, type: "Integer" },
        infeedLoadValue: { id: 7, type: "Integer" }, // hundredth Amps
        infeedCapacity: { id: 10, type: "Integer" }, // Amps
        infeedVoltage: { id: 11, type: "Integer" }, // tenth Volts (line-to-line)
        infeedPower: { id: 12, type: "Integer" }, // Watts
        infeedApparentPower: { id: 13, type: "Integer" }, // Volt-Amps
        infeedPowerFactor: { id: 14, type: "Integer" }, // hundredths
        infeedEnergy: { id: 16, type: "Integer" }, // tenth Kilowatt-Hours
      },
    },
    {
      name: outlet, // outletTable
      oid: `${S3}.2.3.1`,
      index: ["towerIndex", "infeedIndex", "outletIndex"],
      unit: { index: 0 },
      number: { index: 2 },
      sub: { part: { index: 1 }, span: 64 },
      columns: {
        outletID: { id: 2, type: "OctetString" }, // SIZE(2..4): AA1, ...
        outletName: { id: 3, type: "OctetString", writable: true }, // SIZE(0..24)
        outletCapabilities: { id: 4, type: "OctetString" }, // BITS: onSense(0), loadSense(1), powerControl(2), ...
        outletStatus: { id: 5, type: "Integer" },
        outletLoadStatus: { id: 6, type: "Integer" },
        outletLoadValue: { id: 7, type: "Integer" }, // hundredth Amps
        outletControlAction: { id: 11, type: "Integer", writable: true }, // none(0), on(1), off(2), reboot(3)
        outletCapacity: { id: 12, type: "Integer" }, // Amps
        outletVoltage: { id: 13, type: "Integer" }, // tenth Volts
        outletPower: { id: 14, type: "Integer" }, // Watts
        outletApparentPower: { id: 15, type: "Integer" }, // Volt-Amps
        outletPowerFactor: { id: 16, type: "Integer" }, // hundredths
        outletEnergy: { id: 18, type: "Integer" }, // Watt-Hours
        outletPostOnDelay: { id: 20, type: "Integer", writable: true }, // seconds (0..900)
      },
    },
  ],
  identity: {
    serial: { table: tower, column: "towerProductSN" },
    model: { table: tower, column: "towerModelNumber" },
    name: { table: tower, column: "towerName" },
    firmware: { scalar: `${S3}.1.1.0` },
  },
  outlets: {
    table: outlet,
    withoutOutlets: { units: { table: tower, column: "towerProductSN" } },
    name: { table: outlet, column: "outletID" },
    label: { table: outlet, column: "outletName" },
    // outletStatus: off(0), on(1); the wait, error, fuse and noComm states say neither for sure.
    state: { table: outlet, column: "outletStatus", values: { 0: "off", 1: "on" } },
    measurements: [
      { table: outlet, column: "outletLoadValue", type: "current", units: "A", scale: 0.01, absentBelow: 0 },
      { table: outlet, column: "outletVoltage", type: "voltage", units: "V", scale: 0.1, absentBelow: 0 },
      { table: outlet, column: "outletPower", type: "realPower", units: "W", scale: 1, absentBelow: 0 },
      {
        table: outlet,
        column: "outletApparentPower",
        type: "apparentPower",
        units: "VA",
        scale: 1,
        absentBelow: 0,
      },
      {
        table: outlet,
        column: "outletPowerFactor",
        type: "powerFactor",
        units: "%",
        scale: 1,
        absentBelow: 0,
      },
      { table: outlet, column: "outletEnergy", type: "energy", units: "kWh", scale: 0.001, absentBelow: 0 },
    ],
    alarm: { table: outlet, column: "outletLoadStatus", states: LOAD_STATUS },
    rating: { table: outlet, column: "outletCapacity", scale: 1, absentBelow: 0 },
    delays: { on: { table: outlet, column: "outletPostOnDelay" } },
  },
  entities: [
    {
      prefix: "total",
      table: tower,
      fallbackName: "Tower",
      measurements: [
        { table: tower, column: "towerActivePower", type: "realPower", units: "W", scale: 1, absentBelow: 0 },
        {
          table: tower,
          column: "towerApparentPower",
          type: "apparentPower",
          units: "VA",
          scale: 1,
          absentBelow: 0,
        },
        {
          table: tower,
          column: "towerPowerFactor",
          type: "powerFactor",
          units: "%",
          scale: 1,
          absentBelow: 0,
        },
        { table: tower, column: "towerEnergy", type: "energy", units: "kWh", scale: 1, absentBelow: 0 },
      ],
      alarm: { table: tower, column: "towerStatus", states: TOWER_STATUS },
    },
    {
      prefix: "infeed",
      table: infeed,
      name: { table: infeed, column: "infeedName" },
      fallbackName: "Input feed",
      measurements: [
        {
          table: infeed,
          column: "infeedLoadValue",
          type: "current",
          units: "A",
          scale: 0.01,
          absentBelow: 0,
        },
        { table: infeed, column: "infeedVoltage", type: "voltage", units: "V", scale: 0.1, absentBelow: 0 },
        { table: infeed, column: "infeedPower", type: "realPower", units: "W", scale: 1, absentBelow: 0 },
        {
          table: infeed,
          column: "infeedApparentPower",
          type: "apparentPower",
          units: "VA",
          scale: 1,
          absentBelow: 0,
        },
        {
          table: infeed,
          column: "infeedPowerFactor",
          type: "powerFactor",
          units: "%",
          scale: 1,
          absentBelow: 0,
        },
        { table: infeed, column: "infeedEnergy", type: "energy", units: "kWh", scale: 0.1, absentBelow: 0 },
      ],
      alarm: { table: infeed, column: "infeedLoadStatus", states: LOAD_STATUS },
      rating: { table: infeed, column: "infeedCapacity", scale: 1, absentBelow: 0 },
    },
  ],
  control: {
    table: outlet,
    column: "outletControlAction",
    on: 1,
    off: 2,
    reboot: 3,
    // "If the outletCapabilities 'powerControl' bit is FALSE, then the actions have no effect."
    requires: { column: "outletCapabilities", bit: 2 },
  },
  outletLabel: { table: outlet, column: "outletName", maxLength: 24 },
  resetStatsRefusal: "Sentry3-MIB has no per-outlet energy reset",
};
