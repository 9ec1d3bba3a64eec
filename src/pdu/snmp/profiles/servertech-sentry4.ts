/**
 * ServerTech (Legrand) Sentry4 PDUs (PRO1, PRO2), Sentry4-MIB (1.3.6.1.4.1.1718.4). Tables are
 * indexed by unit (A=1 … F=6), input cord (A=1 … D=4) and the outlet, line, phase or overcurrent
 * protector index within the cord; outlet indexes restart on each cord (IDs AA1, AB1), so the model
 * numbers an outlet (cord − 1) × 128 + outlet (st4OutletIndex is 1..128): on a one-cord unit that is
 * the outlet's own number. Units from the MIB's UNITS clauses: hundredth amps, tenth volts, watts,
 * volt-amps, hundredths of power factor, watt-hours for outlets and tenth kilowatt-hours for cords
 * and phases; -1 is "no reading".
 */
import type { AbsentWhen, SnmpProfile } from "../profile.js";
import { SENTRY4_STATUS } from "./alarms.js";

const ST4 = "1.3.6.1.4.1.1718.4.1";
const unit = { index: 0 } as const;
const byCord = (span: number) => ({ part: { index: 1 }, span }) as const;
/** The readings' ranges start at -1, below any reading: the agent's "no reading". */
const NR = [-1];
/**
 * DeviceStatus values under which a row's readings are not readings: notFound(7) "never
 * connected", lost(8) "disconnected", readError(9) "read failure", noComm(10) "unreachable".
 */
const UNREAD = [7, 8, 9, 10];
/** DeviceStatus notFound(7): "never connected", the row is of nothing that is there. */
const NOT_FOUND = [7];

const outletCfg = "st4OutletConfigEntry";
const outletMon = "st4OutletMonitorEntry";
const cordCfg = "st4InputCordConfigEntry";
const cordMon = "st4InputCordMonitorEntry";
const lineCfg = "st4LineConfigEntry";
const lineMon = "st4LineMonitorEntry";
const phaseCfg = "st4PhaseConfigEntry";
const phaseMon = "st4PhaseMonitorEntry";
const ocpCfg = "st4OcpConfigEntry";
const ocpMon = "st4OcpMonitorEntry";

const OUTLET_UNREAD: AbsentWhen[] = [{ table: outletMon, column: "st4OutletStatus", values: UNREAD }];
const CORD_UNREAD: AbsentWhen[] = [{ table: cordMon, column: "st4InputCordStatus", values: UNREAD }];
const LINE_UNREAD: AbsentWhen[] = [{ table: lineMon, column: "st4LineStatus", values: UNREAD }];
const PHASE_UNREAD: AbsentWhen[] = [{ table: phaseMon, column: "st4PhaseStatus", values: UNREAD }];

const cordIndexed = (
  name: string,
  oid: string,
  third: string,
  span: number,
  columns: SnmpProfile["tables"][number]["columns"],
) => ({
  name,
  oid,
  index: ["st4UnitIndex", "st4InputCordIndex", third],
  unit,
  number: { index: 2 },
  sub: byCord(span),
  columns,
});

export const SERVERTECH_SENTRY4: SnmpProfile = {
  id: "servertech-sentry4",
  family: "ServerTech Sentry4",
  manufacturer: "ServerTech",
  mibs: ["Sentry4-MIB"],
  sysObjectIds: ["1.3.6.1.4.1.1718."],
  probe: outletCfg,
  scalars: {
    [`${ST4}.1.1.3.0`]: { name: "st4SystemFirmwareVersion", type: "OctetString" },
  },
  tables: [
    {
      name: "st4UnitConfigEntry", // st4UnitConfigTable
      oid: `${ST4}.2.2.1`,
      index: ["st4UnitIndex"],
      unit,
      number: { constant: 1 },
      columns: {
        st4UnitName: { id: 3, type: "OctetString" },
        st4UnitProductSN: { id: 4, type: "OctetString" },
        st4UnitModel: { id: 5, type: "OctetString" },
      },
    },
    {
      name: "st4UnitMonitorEntry", // st4UnitMonitorTable
      oid: `${ST4}.2.3.1`,
      index: ["st4UnitIndex"],
      unit,
      number: { constant: 1 },
      columns: { st4UnitStatus: { id: 1, type: "Integer" } }, // DeviceStatus
    },
    {
      name: cordCfg, // st4InputCordConfigTable
      oid: `${ST4}.3.2.1`,
      index: ["st4UnitIndex", "st4InputCordIndex"],
      unit,
      number: { index: 1 },
      columns: {
        st4InputCordName: { id: 3, type: "OctetString" },
        st4InputCordCurrentCapacity: { id: 10, type: "Integer" }, // Amps
      },
    },
    {
      name: cordMon, // st4InputCordMonitorTable
      oid: `${ST4}.3.3.1`,
      index: ["st4UnitIndex", "st4InputCordIndex"],
      unit,
      number: { index: 1 },
      columns: {
        st4InputCordStatus: { id: 2, type: "Integer" }, // DeviceStatus
        st4InputCordActivePower: { id: 3, type: "Integer" }, // Watts
        st4InputCordApparentPower: { id: 5, type: "Integer" }, // Volt-Amps
        st4InputCordPowerFactor: { id: 8, type: "Integer" }, // hundredths
        st4InputCordEnergy: { id: 10, type: "Integer" }, // tenth Kilowatt-Hours
      },
    },
    cordIndexed(lineCfg, `${ST4}.4.2.1`, "st4LineIndex", 4, {
      st4LineLabel: { id: 4, type: "OctetString" },
      st4LineCurrentCapacity: { id: 6, type: "Integer" }, // Amps
    }),
    cordIndexed(lineMon, `${ST4}.4.3.1`, "st4LineIndex", 4, {
      st4LineStatus: { id: 2, type: "Integer" }, // DeviceStatus
      st4LineCurrent: { id: 3, type: "Integer" }, // hundredth Amps
    }),
    cordIndexed(phaseCfg, `${ST4}.5.2.1`, "st4PhaseIndex", 6, {
      st4PhaseID: { id: 2, type: "OctetString" }, // Format=AAN
      st4PhaseLabel: { id: 4, type: "OctetString" },
    }),
    cordIndexed(phaseMon, `${ST4}.5.3.1`, "st4PhaseIndex", 6, {
      st4PhaseStatus: { id: 2, type: "Integer" }, // DeviceStatus
      st4PhaseVoltage: { id: 3, type: "Integer" }, // tenth Volts
      st4PhaseCurrent: { id: 6, type: "Integer" }, // hundredth Amps
      st4PhaseActivePower: { id: 8, type: "Integer" }, // Watts
      st4PhaseApparentPower: { id: 9, type: "Integer" }, // Volt-Amps
      st4PhasePowerFactor: { id: 10, type: "Integer" }, // hundredths
      st4PhaseEnergy: { id: 13, type: "Integer" }, // tenth Kilowatt-Hours
    }),
    cordIndexed(ocpCfg, `${ST4}.6.2.1`, "st4OcpIndex", 64, {
      st4OcpLabel: { id: 4, type: "OctetString" },
      st4OcpCurrentCapacity: { id: 7, type: "Integer" }, // Amps
    }),
    cordIndexed(ocpMon, `${ST4}.6.3.1`, "st4OcpIndex", 64, {
      st4OcpStatus: { id: 1, type: "Integer" }, // DeviceStatus
    }),
    cordIndexed(outletCfg, `${ST4}.8.2.1`, "st4OutletIndex", 128, {
      st4OutletID: { id: 2, type: "OctetString" }, // Format=AAN[N[N]]
      st4OutletName: { id: 3, type: "OctetString", writable: true }, // SIZE(0..32)
      st4OutletCurrentCapacity: { id: 7, type: "Integer" }, // Amps
      st4OutletPhaseID: { id: 30, type: "OctetString" }, // "The internal ID of the phase powering this outlet"
    }),
    cordIndexed(outletMon, `${ST4}.8.3.1`, "st4OutletIndex", 128, {
      st4OutletState: { id: 1, type: "Integer" }, // DeviceState: unknown(0), on(1), off(2)
      st4OutletStatus: { id: 2, type: "Integer" }, // DeviceStatus
      st4OutletCurrent: { id: 3, type: "Integer" }, // hundredth Amps
      st4OutletVoltage: { id: 6, type: "Integer" }, // tenth Volts
      st4OutletActivePower: { id: 7, type: "Integer" }, // Watts
      st4OutletApparentPower: { id: 9, type: "Integer" }, // Volt-Amps
      st4OutletPowerFactor: { id: 10, type: "Integer" }, // hundredths
      st4OutletEnergy: { id: 14, type: "Integer" }, // Watt-Hours
    }),
    cordIndexed("st4OutletControlEntry", `${ST4}.8.5.1`, "st4OutletIndex", 128, {
      st4OutletControlAction: { id: 2, type: "Integer", writable: true },
    }),
  ],
  identity: {
    serial: { table: "st4UnitConfigEntry", column: "st4UnitProductSN" },
    model: { table: "st4UnitConfigEntry", column: "st4UnitModel" },
    name: { table: "st4UnitConfigEntry", column: "st4UnitName" },
    firmware: { scalar: `${ST4}.1.1.3.0` },
  },
  outlets: {
    table: outletCfg,
    name: { table: outletCfg, column: "st4OutletID" },
    label: { table: outletCfg, column: "st4OutletName" },
    state: { table: outletMon, column: "st4OutletState", values: { 1: "on", 2: "off" } },
    measurements: [
      {
        table: outletMon,
        column: "st4OutletCurrent",
        type: "current",
        units: "A",
        scale: 0.01,
        absentIf: NR,
        absentWhen: OUTLET_UNREAD,
      },
      {
        table: outletMon,
        column: "st4OutletVoltage",
        type: "voltage",
        units: "V",
        scale: 0.1,
        absentIf: NR,
        absentWhen: OUTLET_UNREAD,
      },
      {
        table: outletMon,
        column: "st4OutletActivePower",
        type: "realPower",
        units: "W",
        scale: 1,
        absentIf: NR,
        absentWhen: OUTLET_UNREAD,
      },
      {
        table: outletMon,
        column: "st4OutletApparentPower",
        type: "apparentPower",
        units: "VA",
        scale: 1,
        absentIf: NR,
        absentWhen: OUTLET_UNREAD,
      },
      {
        table: outletMon,
        column: "st4OutletPowerFactor",
        type: "powerFactor",
        units: "%",
        scale: 1,
        absentIf: NR,
        absentWhen: OUTLET_UNREAD,
      },
      {
        table: outletMon,
        column: "st4OutletEnergy",
        type: "energy",
        units: "kWh",
        scale: 0.001,
        absentIf: NR,
        absentWhen: OUTLET_UNREAD,
      },
    ],
    alarm: { table: outletMon, column: "st4OutletStatus", states: SENTRY4_STATUS, absentIf: NOT_FOUND },
    rating: { table: outletCfg, column: "st4OutletCurrentCapacity", scale: 1 },
    // The phase (its st4PhaseID): the entity of the outlet's path that measures its current. The
    // over-current protector (st4OutletOcpID) has no current reading in the MIB, and the branch
    // table (st4OutletBranchID) is not read.
    feedsFrom: [
      {
        id: { table: outletCfg, column: "st4OutletPhaseID" },
        match: { table: phaseCfg, column: "st4PhaseID" },
        prefix: "phase",
      },
    ],
  },
  entities: [
    {
      prefix: "cord",
      table: cordCfg,
      name: { table: cordCfg, column: "st4InputCordName" },
      fallbackName: "Input cord",
      measurements: [
        {
          table: cordMon,
          column: "st4InputCordActivePower",
          type: "realPower",
          units: "W",
          scale: 1,
          absentIf: NR,
          absentWhen: CORD_UNREAD,
        },
        {
          table: cordMon,
          column: "st4InputCordApparentPower",
          type: "apparentPower",
          units: "VA",
          scale: 1,
          absentIf: NR,
          absentWhen: CORD_UNREAD,
        },
        {
          table: cordMon,
          column: "st4InputCordPowerFactor",
          type: "powerFactor",
          units: "%",
          scale: 1,
          absentIf: NR,
          absentWhen: CORD_UNREAD,
        },
        {
          table: cordMon,
          column: "st4InputCordEnergy",
          type: "energy",
          units: "kWh",
          scale: 0.1,
          absentIf: NR,
          absentWhen: CORD_UNREAD,
        },
      ],
      alarm: { table: cordMon, column: "st4InputCordStatus", states: SENTRY4_STATUS, absentIf: NOT_FOUND },
      absentWhen: [{ table: cordMon, column: "st4InputCordStatus", values: NOT_FOUND }],
      rating: { table: cordCfg, column: "st4InputCordCurrentCapacity", scale: 1 },
    },
    {
      prefix: "line",
      table: lineCfg,
      name: { table: lineCfg, column: "st4LineLabel" },
      fallbackName: "Line",
      measurements: [
        {
          table: lineMon,
          column: "st4LineCurrent",
          type: "current",
          units: "A",
          scale: 0.01,
          absentIf: NR,
          absentWhen: LINE_UNREAD,
        },
      ],
      alarm: { table: lineMon, column: "st4LineStatus", states: SENTRY4_STATUS, absentIf: NOT_FOUND },
      absentWhen: [{ table: lineMon, column: "st4LineStatus", values: NOT_FOUND }],
      rating: { table: lineCfg, column: "st4LineCurrentCapacity", scale: 1 },
    },
    {
      prefix: "phase",
      table: phaseCfg,
      name: { table: phaseCfg, column: "st4PhaseLabel" },
      fallbackName: "Phase",
      measurements: [
        {
          table: phaseMon,
          column: "st4PhaseVoltage",
          type: "voltage",
          units: "V",
          scale: 0.1,
          absentIf: NR,
          absentWhen: PHASE_UNREAD,
        },
        {
          table: phaseMon,
          column: "st4PhaseCurrent",
          type: "current",
          units: "A",
          scale: 0.01,
          absentIf: NR,
          absentWhen: PHASE_UNREAD,
        },
        {
          table: phaseMon,
          column: "st4PhaseActivePower",
          type: "realPower",
          units: "W",
          scale: 1,
          absentIf: NR,
          absentWhen: PHASE_UNREAD,
        },
        {
          table: phaseMon,
          column: "st4PhaseApparentPower",
          type: "apparentPower",
          units: "VA",
          scale: 1,
          absentIf: NR,
          absentWhen: PHASE_UNREAD,
        },
        {
          table: phaseMon,
          column: "st4PhasePowerFactor",
          type: "powerFactor",
          units: "%",
          scale: 1,
          absentIf: NR,
          absentWhen: PHASE_UNREAD,
        },
        {
          table: phaseMon,
          column: "st4PhaseEnergy",
          type: "energy",
          units: "kWh",
          scale: 0.1,
          absentIf: NR,
          absentWhen: PHASE_UNREAD,
        },
      ],
      alarm: { table: phaseMon, column: "st4PhaseStatus", states: SENTRY4_STATUS, absentIf: NOT_FOUND },
      absentWhen: [{ table: phaseMon, column: "st4PhaseStatus", values: NOT_FOUND }],
    },
    {
      prefix: "breaker",
      table: ocpCfg,
      name: { table: ocpCfg, column: "st4OcpLabel" },
      fallbackName: "Breaker",
      measurements: [],
      alarm: { table: ocpMon, column: "st4OcpStatus", states: SENTRY4_STATUS, absentIf: NOT_FOUND },
      absentWhen: [{ table: ocpMon, column: "st4OcpStatus", values: NOT_FOUND }],
      rating: { table: ocpCfg, column: "st4OcpCurrentCapacity", scale: 1 },
    },
  ],
  control: {
    table: "st4OutletControlEntry",
    column: "st4OutletControlAction",
    on: 1,
    off: 2,
    reboot: 3,
  },
  outletLabel: { table: outletCfg, column: "st4OutletName", maxLength: 32 },
  resetStatsRefusal: "Sentry4-MIB has no per-outlet energy reset",
};
