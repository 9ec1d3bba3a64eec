/**
 * Eaton ePDUs of the G2/G3 generation (switched, managed, advanced monitored, monitored),
 * EATON-EPDU-MIB (1.3.6.1.4.1.534.6.6.7). Units daisy-chained behind one address ("strapping")
 * answer with their `strappingIndex` (0..23; 0 for a unit that does not strap) first in every
 * index: each is a device. Inputs are indexed (unit, input), their voltage and current rows (unit,
 * input, measurement): the model numbers those (input − 1) × span + measurement, so the rows of a
 * second input stay distinct. Groups (breakers, outlet sections, user-defined groups) and outlets
 * are indexed (unit, group) and (unit, outlet).
 *
 * Units from the DESCRIPTIONs: milliamps, millivolts, watts, VA, watt-hours, power factor in
 * thousandths; "a negative value indicates that this object is not available". Switching is one
 * object per command (outletControlOnCmd, …OffCmd, …RebootCmd), each taking the delay before the
 * command in seconds: the bridge writes 0 (now). An outlet's energy (outletWh, Unsigned32) is reset
 * by writing 0 to it.
 */
import type {
  AbsentWhen,
  AlarmDef,
  AlarmState,
  MeasurementDef,
  Presence,
  SnmpProfile,
  StateDef,
} from "../profile.js";
import { states } from "./alarms.js";

const EP = "1.3.6.1.4.1.534.6.6.7";
const unit = { index: 0 } as const;

const unitT = "unitEntry";
const inputT = "inputEntry";
const inVolt = "inputVoltageEntry";
const inCurr = "inputCurrentEntry";
const inPower = "inputTotalPowerEntry";
const groupT = "groupEntry";
const grVolt = "groupVoltageEntry";
const grCurr = "groupCurrentEntry";
const grPower = "groupPowerEntry";
const outletT = "outletEntry";
const outVolt = "outletVoltageEntry";
const outCurr = "outletCurrentEntry";
const outPower = "outletPowerEntry";
const outCtl = "outletControlEntry";

/** The …ThStatus enumerations: good(0), lowWarning(1), lowCritical(2), highWarning(3), highCritical(4). */
const TH_STATUS: Readonly<Record<number, AlarmState>> = {
  0: states.normal("good"),
  1: states.warning("lowWarning"),
  2: states.alarm("lowCritical"),
  3: states.warning("highWarning"),
  4: states.alarm("highCritical"),
};

/** groupBreakerStatus: notApplicable(0), breakerOn(1), breakerOff(2). */
const BREAKER_STATUS: Readonly<Record<number, AlarmState>> = {
  0: states.normal("notApplicable"),
  1: states.normal("breakerOn"),
  2: states.alarm("breakerOff"),
};

/**
 * unitEntry.communicationStatus communicationLost(1): "the internal communication with the PDU"
 * is lost, so nothing the agent serves of that unit is a reading of it now.
 */
const LOST: AbsentWhen = { table: unitT, column: "communicationStatus", values: [1] };
const unlessLost = <T extends Presence>(def: T): T => ({
  ...def,
  absentWhen: [...(def.absentWhen ?? []), LOST],
});

/** groupType values of a breaker: breaker1pole(1), breaker2pole(2), breaker3pole(3). */
const BREAKERS = [1, 2, 3];

const power = (table: string, va: string, watts: string, wh: string, pf: string): MeasurementDef[] => [
  { table, column: watts, type: "realPower", units: "W", scale: 1, absentBelow: 0 },
  { table, column: va, type: "apparentPower", units: "VA", scale: 1, absentBelow: 0 },
  { table, column: pf, type: "powerFactor", units: "%", scale: 0.1, absentBelow: 0 },
  { table, column: wh, type: "energy", units: "kWh", scale: 0.001 },
];

const groupReadings: MeasurementDef[] = [
  { table: grCurr, column: "groupCurrent", type: "current", units: "A", scale: 0.001, absentBelow: 0 },
  { table: grVolt, column: "groupVoltage", type: "voltage", units: "V", scale: 0.001, absentBelow: 0 },
  ...power(grPower, "groupVA", "groupWatts", "groupWh", "groupPowerFactor"),
];

export const EATON_EPDU: SnmpProfile = {
  id: "eaton-epdu",
  family: "Eaton ePDU",
  manufacturer: "Eaton",
  mibs: ["EATON-EPDU-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.534."],
  probe: [outletT, unitT],
  tables: [
    {
      name: unitT, // unitTable
      oid: `${EP}.1.2.1`,
      index: ["strappingIndex"],
      unit,
      number: { constant: 1 },
      columns: {
        productName: { id: 2, type: "OctetString" },
        partNumber: { id: 3, type: "OctetString" },
        serialNumber: { id: 4, type: "OctetString" },
        firmwareVersion: { id: 5, type: "OctetString" },
        unitName: { id: 6, type: "OctetString" },
        communicationStatus: { id: 30, type: "Integer" }, // good(0), communicationLost(1)
      },
    },
    {
      name: inputT, // inputTable
      oid: `${EP}.3.1.1`,
      index: ["strappingIndex", "inputIndex"],
      unit,
      number: { index: 1 },
      columns: {
        inputType: { id: 2, type: "Integer" },
        inputFeedName: { id: 10, type: "OctetString" },
      },
    },
    {
      name: inVolt, // inputVoltageTable
      oid: `${EP}.3.2.1`,
      index: ["strappingIndex", "inputIndex", "inputVoltageIndex"],
      unit,
      number: { index: 2 },
      sub: { part: { index: 1 }, span: 3 }, // inputVoltageIndex 1..3
      columns: {
        inputVoltage: { id: 3, type: "Integer" }, // millivolts
        inputVoltageThStatus: { id: 4, type: "Integer" },
      },
    },
    {
      name: inCurr, // inputCurrentTable
      oid: `${EP}.3.3.1`,
      index: ["strappingIndex", "inputIndex", "inputCurrentIndex"],
      unit,
      number: { index: 2 },
      sub: { part: { index: 1 }, span: 4 }, // inputCurrentIndex 1..4
      columns: {
        inputCurrentCapacity: { id: 3, type: "Integer" }, // milliamps (negative: unknown)
        inputCurrent: { id: 4, type: "Integer" }, // milliamps
        inputCurrentThStatus: { id: 5, type: "Integer" },
        inputPhaseDesignator: { id: 12, type: "OctetString" },
      },
    },
    {
      name: inPower, // inputTotalPowerTable
      oid: `${EP}.3.5.1`,
      index: ["strappingIndex", "inputIndex"],
      unit,
      number: { index: 1 },
      columns: {
        inputTotalVA: { id: 3, type: "Integer" }, // VA
        inputTotalWatts: { id: 4, type: "Integer" }, // watts
        inputTotalWh: { id: 5, type: "Gauge" }, // Unsigned32, watt-hours
        inputTotalPowerFactor: { id: 7, type: "Integer" }, // thousandths
      },
    },
    {
      name: groupT, // groupTable
      oid: `${EP}.5.1.1`,
      index: ["strappingIndex", "groupIndex"],
      unit,
      number: { index: 1 },
      columns: {
        groupID: { id: 2, type: "OctetString" },
        groupName: { id: 3, type: "OctetString" },
        groupType: { id: 4, type: "Integer" },
        groupBreakerStatus: { id: 5, type: "Integer" },
      },
    },
    {
      name: grVolt, // groupVoltageTable
      oid: `${EP}.5.3.1`,
      index: ["strappingIndex", "groupIndex"],
      unit,
      number: { index: 1 },
      columns: { groupVoltage: { id: 3, type: "Integer" } }, // millivolts
    },
    {
      name: grCurr, // groupCurrentTable
      oid: `${EP}.5.4.1`,
      index: ["strappingIndex", "groupIndex"],
      unit,
      number: { index: 1 },
      columns: {
        groupCurrentCapacity: { id: 2, type: "Integer" }, // milliamps (negative: unknown)
        groupCurrent: { id: 3, type: "Integer" }, // milliamps
        groupCurrentThStatus: { id: 4, type: "Integer" },
      },
    },
    {
      name: grPower, // groupPowerTable
      oid: `${EP}.5.5.1`,
      index: ["strappingIndex", "groupIndex"],
      unit,
      number: { index: 1 },
      columns: {
        groupVA: { id: 2, type: "Integer" },
        groupWatts: { id: 3, type: "Integer" },
        groupWh: { id: 4, type: "Gauge" }, // Unsigned32, watt-hours
        groupPowerFactor: { id: 6, type: "Integer" }, // thousandths
      },
    },
    {
      name: outletT, // outletTable
      oid: `${EP}.6.1.1`,
      index: ["strappingIndex", "outletIndex"],
      unit,
      number: { index: 1 },
      columns: {
        outletID: { id: 2, type: "OctetString" }, // SIZE(2..4): A1, ...
        outletName: { id: 3, type: "OctetString", writable: true }, // SIZE(1..31)
      },
    },
    {
      name: outVolt, // outletVoltageTable
      oid: `${EP}.6.3.1`,
      index: ["strappingIndex", "outletIndex"],
      unit,
      number: { index: 1 },
      columns: { outletVoltage: { id: 2, type: "Integer" } }, // millivolts
    },
    {
      name: outCurr, // outletCurrentTable
      oid: `${EP}.6.4.1`,
      index: ["strappingIndex", "outletIndex"],
      unit,
      number: { index: 1 },
      columns: {
        outletCurrentCapacity: { id: 2, type: "Integer" }, // milliamps (negative: unknown)
        outletCurrent: { id: 3, type: "Integer" }, // milliamps
        outletCurrentThStatus: { id: 4, type: "Integer" },
      },
    },
    {
      name: outPower, // outletPowerTable
      oid: `${EP}.6.5.1`,
      index: ["strappingIndex", "outletIndex"],
      unit,
      number: { index: 1 },
      columns: {
        outletVA: { id: 2, type: "Integer" },
        outletWatts: { id: 3, type: "Integer" },
        outletWh: { id: 4, type: "Gauge", writable: true }, // Unsigned32, watt-hours; 0 resets
        outletPowerFactor: { id: 6, type: "Integer" }, // thousandths
      },
    },
    {
      name: outCtl, // outletControlTable (switched units)
      oid: `${EP}.6.6.1`,
      index: ["strappingIndex", "outletIndex"],
      unit,
      number: { index: 1 },
      columns: {
        outletControlStatus: { id: 2, type: "Integer" }, // off(0), on(1), pendingOff(2), pendingOn(3)
        outletControlOffCmd: { id: 3, type: "Integer", writable: true }, // seconds until off; -1 cancels
        outletControlOnCmd: { id: 4, type: "Integer", writable: true }, // seconds until on; -1 cancels
        outletControlRebootCmd: { id: 5, type: "Integer", writable: true }, // seconds until the reboot
        outletControlSequenceDelay: { id: 7, type: "Integer", writable: true }, // s; also the power-on delay
        outletControlRebootOffTime: { id: 8, type: "Integer", writable: true }, // s off in a reboot
      },
    },
  ],
  identity: {
    serial: { table: unitT, column: "serialNumber" },
    model: { table: unitT, column: "partNumber" },
    name: { table: unitT, column: "unitName" },
    firmware: { table: unitT, column: "firmwareVersion" },
  },
  outlets: {
    table: outletT,
    withoutOutlets: { units: { table: unitT, column: "serialNumber" } },
    name: { table: outletT, column: "outletID" },
    label: { table: outletT, column: "outletName" },
    // A pending command has not switched the outlet yet: pendingOff is still on, pendingOn still off.
    state: unlessLost<StateDef>({
      table: outCtl,
      column: "outletControlStatus",
      values: { 0: "off", 1: "on", 2: "on", 3: "off" },
    }),
    measurements: [
      { table: outCurr, column: "outletCurrent", type: "current", units: "A", scale: 0.001, absentBelow: 0 },
      { table: outVolt, column: "outletVoltage", type: "voltage", units: "V", scale: 0.001, absentBelow: 0 },
      ...power(outPower, "outletVA", "outletWatts", "outletWh", "outletPowerFactor"),
    ].map((m) => unlessLost<MeasurementDef>(m)),
    // "A negative value indicates that this object is not available."
    alarm: unlessLost<AlarmDef>({
      table: outCurr,
      column: "outletCurrentThStatus",
      states: TH_STATUS,
      absentBelow: 0,
    }),
    rating: { table: outCurr, column: "outletCurrentCapacity", scale: 0.001, absentBelow: 0 },
    delays: {
      on: { table: outCtl, column: "outletControlSequenceDelay" },
      reboot: { table: outCtl, column: "outletControlRebootOffTime" },
    },
  },
  entities: [
    {
      prefix: "inlet",
      absentWhen: [LOST],
      table: inputT,
      name: { table: inputT, column: "inputFeedName" },
      fallbackName: "Input",
      measurements: power(
        inPower,
        "inputTotalVA",
        "inputTotalWatts",
        "inputTotalWh",
        "inputTotalPowerFactor",
      ),
    },
    {
      prefix: "line",
      absentWhen: [LOST],
      table: inCurr,
      name: { table: inCurr, column: "inputPhaseDesignator" },
      fallbackName: "Input current",
      measurements: [
        { table: inCurr, column: "inputCurrent", type: "current", units: "A", scale: 0.001, absentBelow: 0 },
      ],
      alarm: { table: inCurr, column: "inputCurrentThStatus", states: TH_STATUS },
      rating: { table: inCurr, column: "inputCurrentCapacity", scale: 0.001, absentBelow: 0 },
    },
    {
      prefix: "phase",
      absentWhen: [LOST],
      table: inVolt,
      fallbackName: "Input voltage",
      measurements: [
        { table: inVolt, column: "inputVoltage", type: "voltage", units: "V", scale: 0.001, absentBelow: 0 },
      ],
      alarm: { table: inVolt, column: "inputVoltageThStatus", states: TH_STATUS },
    },
    {
      prefix: "breaker",
      absentWhen: [LOST],
      table: groupT,
      where: { table: groupT, column: "groupType", values: BREAKERS },
      name: { table: groupT, column: "groupName" },
      fallbackName: "Breaker",
      measurements: groupReadings,
      alarm: { table: groupT, column: "groupBreakerStatus", states: BREAKER_STATUS, reportsTrip: true },
      rating: { table: grCurr, column: "groupCurrentCapacity", scale: 0.001, absentBelow: 0 },
    },
    {
      prefix: "group",
      absentWhen: [LOST],
      table: groupT,
      where: { table: groupT, column: "groupType", values: BREAKERS, not: true },
      name: { table: groupT, column: "groupName" },
      fallbackName: "Group",
      measurements: groupReadings,
      alarm: { table: grCurr, column: "groupCurrentThStatus", states: TH_STATUS },
      rating: { table: grCurr, column: "groupCurrentCapacity", scale: 0.001, absentBelow: 0 },
    },
  ],
  control: {
    table: outCtl,
    column: "outletControlOnCmd",
    columns: { on: "outletControlOnCmd", off: "outletControlOffCmd", reboot: "outletControlRebootCmd" },
    on: 0, // seconds until the command: now
    off: 0,
    reboot: 0,
  },
  outletLabel: { table: outletT, column: "outletName", maxLength: 31 },
  resetEnergy: { name: "outletWh", oid: `${EP}.6.5.1.4`, suffix: [], value: 0, type: "Gauge" },
};
