/**
 * Raritan PX (first generation), PDU-MIB (1.3.6.1.4.1.13742.4): `board` scalars for identity, one
 * outletTable row per outlet with its readings, inletTable and circuitBreakerTable. Units from the
 * MIB's textual conventions: MilliAmps, MilliVolts, Watts, VoltAmps, WattHours,
 * PowerFactorPercentage (the ratio × 100). The model name is not readable (objectName is
 * accessible-for-notify only).
 */
import type { AbsentWhen, SnmpProfile } from "../profile.js";
import { states } from "./alarms.js";

const PX = "1.3.6.1.4.1.13742.4";
const outlet = "outletEntry";
const inlet = "inletEntry";
const breaker = "circuitBreakerEntry";

/**
 * outletEnergySupport "No": "outletWattHours and dataLogOutletWattHours will be zero", and
 * inletActiveEnergy "has an invalid value".
 */
const NO_ENERGY: AbsentWhen[] = [{ scalar: `${PX}.1.1.32.0`, values: ["No"] }];
/** inletCurrent, inletVoltage: "does not apply to 3 phase systems; a value of 0 will be reported". */
const THREE_PHASE: AbsentWhen[] = [{ table: inlet, column: "inletPoleCount", values: [3, 4] }];

export const RARITAN_PX: SnmpProfile = {
  id: "raritan-px",
  family: "Raritan PX (PDU-MIB)",
  manufacturer: "Raritan",
  mibs: ["PDU-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.13742."],
  probe: "outletEntry",
  scalars: {
    [`${PX}.1.1.1.0`]: { name: "firmwareVersion", type: "OctetString" },
    [`${PX}.1.1.2.0`]: { name: "serialNumber", type: "OctetString" },
    [`${PX}.1.1.6.0`]: { name: "mac", type: "OctetString" }, // MacAddress
    [`${PX}.1.1.7.0`]: { name: "hardwareRev", type: "Integer" },
    [`${PX}.1.1.32.0`]: { name: "outletEnergySupport", type: "OctetString" }, // "Yes" / "No"
  },
  tables: [
    {
      name: outlet, // outletTable
      oid: `${PX}.1.2.2.1`,
      index: ["outletIndex"],
      number: { index: 0 },
      columns: {
        outletLabel: { id: 2, type: "OctetString", writable: true },
        outletOperationalState: { id: 3, type: "Integer", writable: true }, // error(-1), off(0), on(1), cycling(2)
        outletCurrent: { id: 4, type: "Unsigned" }, // MilliAmps
        outletVoltage: { id: 6, type: "Unsigned" }, // MilliVolts
        outletActivePower: { id: 7, type: "Unsigned" }, // Watts
        outletApparentPower: { id: 8, type: "Unsigned" }, // VoltAmps
        outletPowerFactor: { id: 9, type: "Unsigned" }, // PowerFactorPercentage
        outletCurrentRating: { id: 30, type: "Unsigned" }, // MilliAmps
        outletWattHours: { id: 31, type: "Unsigned" }, // WattHours
      },
    },
    {
      name: breaker, // circuitBreakerTable
      oid: `${PX}.1.5.2.1`,
      index: ["circuitBreakerIndex"],
      number: { index: 0 },
      columns: {
        circuitBreakerLabel: { id: 2, type: "OctetString" },
        circuitBreakerState: { id: 3, type: "Integer" }, // ok(0), tripped(1)
        circuitBreakerCurrentRating: { id: 4, type: "Unsigned" }, // MilliAmps
        circuitBreakerCurrent: { id: 5, type: "Unsigned" }, // MilliAmps
      },
    },
    {
      name: inlet, // inletTable
      oid: `${PX}.1.20.2.1`,
      index: ["inletIndex"],
      number: { index: 0 },
      columns: {
        inletPoleCount: { id: 3, type: "Integer" }, // 1 single phase, 3 delta, 4 wye
        inletCurrentRating: { id: 4, type: "Unsigned" }, // MilliAmps
        inletCurrent: { id: 7, type: "Unsigned" }, // MilliAmps
        inletVoltage: { id: 8, type: "Unsigned" }, // MilliVolts
        inletActivePower: { id: 9, type: "Unsigned" }, // Watts
        inletApparentPower: { id: 10, type: "Unsigned" }, // VoltAmps
        inletPowerFactor: { id: 11, type: "Unsigned" }, // PowerFactorPercentage
        inletActiveEnergy: { id: 12, type: "Unsigned" }, // WattHours
      },
    },
  ],
  identity: {
    serial: { scalar: `${PX}.1.1.2.0` },
    firmware: { scalar: `${PX}.1.1.1.0` },
    mac: { scalar: `${PX}.1.1.6.0` },
    hardware: { scalar: `${PX}.1.1.7.0` },
  },
  outlets: {
    table: outlet,
    label: { table: outlet, column: "outletLabel" }, // "A textual string containing information about the outlet", read-write
    state: { table: outlet, column: "outletOperationalState", values: { 0: "off", 1: "on" } },
    measurements: [
      { table: outlet, column: "outletCurrent", type: "current", units: "A", scale: 0.001 },
      { table: outlet, column: "outletVoltage", type: "voltage", units: "V", scale: 0.001 },
      { table: outlet, column: "outletActivePower", type: "realPower", units: "W", scale: 1 },
      { table: outlet, column: "outletApparentPower", type: "apparentPower", units: "VA", scale: 1 },
      { table: outlet, column: "outletPowerFactor", type: "powerFactor", units: "%", scale: 1 },
      {
        table: outlet,
        column: "outletWattHours",
        type: "energy",
        units: "kWh",
        scale: 0.001,
        absentWhen: NO_ENERGY,
      },
    ],
    rating: { table: outlet, column: "outletCurrentRating", scale: 0.001 },
  },
  entities: [
    {
      prefix: "inlet",
      table: inlet,
      fallbackName: "Inlet",
      measurements: [
        {
          table: inlet,
          column: "inletCurrent",
          type: "current",
          units: "A",
          scale: 0.001,
          absentWhen: THREE_PHASE,
        },
        {
          table: inlet,
          column: "inletVoltage",
          type: "voltage",
          units: "V",
          scale: 0.001,
          absentWhen: THREE_PHASE,
        },
        { table: inlet, column: "inletActivePower", type: "realPower", units: "W", scale: 1 },
        { table: inlet, column: "inletApparentPower", type: "apparentPower", units: "VA", scale: 1 },
        { table: inlet, column: "inletPowerFactor", type: "powerFactor", units: "%", scale: 1 },
        {
          table: inlet,
          column: "inletActiveEnergy",
          type: "energy",
          units: "kWh",
          scale: 0.001,
          absentWhen: NO_ENERGY,
        },
      ],
      rating: { table: inlet, column: "inletCurrentRating", scale: 0.001 },
    },
    {
      prefix: "breaker",
      table: breaker,
      name: { table: breaker, column: "circuitBreakerLabel" },
      fallbackName: "Breaker",
      measurements: [
        { table: breaker, column: "circuitBreakerCurrent", type: "current", units: "A", scale: 0.001 },
      ],
      alarm: {
        table: breaker,
        column: "circuitBreakerState",
        states: { 0: states.normal("ok"), 1: states.alarm("tripped") },
        reportsTrip: true,
      },
      rating: { table: breaker, column: "circuitBreakerCurrentRating", scale: 0.001 },
    },
  ],
  control: {
    table: outlet,
    column: "outletOperationalState",
    on: 1,
    off: 0,
    reboot: 2, // cycling
  },
  outletLabel: { table: outlet, column: "outletLabel", maxLength: 255 },
  resetStatsRefusal: "PDU-MIB has no energy reset",
};
