/** Small builders of model snapshots for tests that do not need a PDU on the wire. */
import type { Alarm, Device, Outlet, OutletState, PduSystem, Snapshot, Vendor } from "../src/pdu/model.js";

/** The vendor a Geist unit's snapshots carry (what discovery names its maker). */
export const VENDOR: Vendor = Object.freeze({ manufacturer: "Vertiv", groupModel: "OneView group" });

export const CLEAR: Alarm = Object.freeze({ state: "none", severity: "alarm", raised: false });

export const SYSTEM: PduSystem = Object.freeze({
  label: "Test PDU",
  oem: "GEI",
  model: "SIM",
  modelNumber: "SIM-1",
  serialNumber: "SIM0001",
  hardwareVersion: "1.0",
  firmwareVersion: "5.0.0",
  apiVersion: "1.0.1",
  macAddress: "02:00:00:00:00:01",
  ipAddress: "127.0.0.1",
});

export function outlet(index: number, state: OutletState, realPower = state === "on" ? 50 : 0): Outlet {
  return {
    index,
    name: `Outlet ${index + 1}`,
    label: "",
    displayName: `Outlet ${index + 1}`,
    state,
    alarm: CLEAR,
    onDelay: 0,
    offDelay: 0,
    rebootDelay: 5,
    poaAction: "last",
    measurements: [{ type: "realPower", value: realPower, raw: String(realPower), units: "W", alarm: null }],
  };
}

/** One device `DEV0` whose outlets have the given states. */
export function snapshotWith(instanceId: string, timestamp: number, states: OutletState[]): Snapshot {
  const device: Device = {
    id: "DEV0",
    name: "Test PDU",
    label: "",
    displayName: "Test PDU",
    type: "rpdu",
    state: "normal",
    alarm: CLEAR,
    order: 1,
    outletControlEnabled: true,
    lifetimeEnergy: null,
    system: SYSTEM,
    route: null,
    outlets: states.map((s, i) => outlet(i, s)),
    entities: [],
  };
  return {
    instanceId,
    timestamp,
    mode: "single",
    vendor: VENDOR,
    system: SYSTEM,
    devices: [device],
    groups: [],
  };
}
