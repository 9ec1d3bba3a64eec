/**
 * A Geist simulator in a fleet of loads (./fleet.ts): the port the fleet reads it through (relays,
 * volts, entities, its write journal; stopping it makes it refuse connections) and a socket on
 * every outlet, through which the outlet draws what the load plugged into it draws.
 */
import type { EntityReading, FleetLink, FleetPduPort, PduWrite } from "./fleet.js";
import type { OutletSocket, SimState } from "./state.js";
import { apiTree } from "./tree.js";
import type { FleetMembership, JournalEntry, SimulatorFault } from "./types.js";

/** What the port needs of the simulator besides its state. */
export interface GeistFleetHost {
  readonly state: SimState;
  setFault(fault: SimulatorFault | null): Promise<void>;
  journal(): JournalEntry[];
}

const OUTLET_PATH = /^\/api\/dev\/([^/]+)\/outlet\/(0|[1-9][0-9]*)$/;

function numeric(raw: string | undefined): number | null {
  if (raw === undefined) return null;
  const n = Number(raw);
  return raw.trim() !== "" && Number.isFinite(n) ? n : null;
}

/** The port of a Geist simulator: device ids are the fleet's devices, times the fleet's epoch ms. */
function portOf(host: GeistFleetHost): FleetPduPort {
  const { state } = host;
  const at = (t: number) => t - state.origin;
  const outlet = (device: string | null, index: number) =>
    device === null ? undefined : state.locate(device)?.device.outlets.get(index);
  return {
    hasOutlet: (device, index) => outlet(device, index) !== undefined,
    relayOn: (device, index, t) => outlet(device, index)?.stateAt(at(t)) === "on",
    relayChanges: (device, index, t) =>
      (outlet(device, index)?.changesAfter(at(t)) ?? []).map((rel) => rel + state.origin),
    volts: (device, t) => (device === null ? null : state.locate(device)?.device.voltage.at(at(t))) ?? 0,
    setAnswering: (answering) => host.setFault(answering ? null : "refuse"),
    entities: () => {
      const out: EntityReading[] = [];
      for (const unit of state.units) {
        for (const [device, d] of Object.entries(apiTree(state, unit).dev)) {
          for (const [key, e] of Object.entries(d.entity)) {
            const value = (type: string) =>
              numeric(Object.values(e.measurement).find((m) => m.type === type)?.value);
            out.push({ device, key, amps: value("current"), watts: value("realPower") });
          }
        }
      }
      return out;
    },
    writes: () => {
      const out: Omit<PduWrite, "pdu">[] = [];
      for (const w of host.journal()) {
        const m = OUTLET_PATH.exec(w.path);
        const action = w.data.action;
        if (w.cmd !== "control" || m === null || typeof action !== "string") continue;
        out.push({ time: w.time, device: decodeURIComponent(m[1]!), outlet: Number(m[2]), action });
      }
      return out;
    },
  };
}

function socketOf(link: FleetLink, origin: number, device: string, index: number): OutletSocket {
  return {
    watts: (t) => link.watts(device, index, t + origin),
    powerFactor: () => link.powerFactor(device, index),
    energyWh: (t) => link.energyWh(device, index, t + origin),
    switching: (t) => link.switching(t + origin),
    switched: (t) => link.switched(device, index, t + origin),
  };
}

/** Joins the simulator to the fleet: every outlet of every device gets its socket. */
export function joinGeistFleet(host: GeistFleetHost, membership: FleetMembership): void {
  const link = membership.fleet.attach(membership.name, membership.feed ?? null, portOf(host));
  const { state } = host;
  const now = state.now();
  for (const unit of state.units)
    for (const device of unit.devices.values())
      for (const outlet of device.outlets.values())
        outlet.attach(socketOf(link, state.origin, device.id, outlet.index), now);
}
