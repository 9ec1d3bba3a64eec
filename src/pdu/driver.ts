/**
 * The seam between the core and a PDU family: everything the poller, the control core and
 * discovery need from a PDU, and nothing of how a family speaks to it. A driver (src/pdu/geist/ is
 * the one so far) is created per configured instance by the factory in ./drivers.ts; the core
 * imports only this file and the vendor-neutral model.
 */
import type { DeviceRoute, Snapshot, Vendor } from "./model.js";

/**
 * The HTTP header naming the replica that sends a request to a PDU (`Cluster.MemberName`), sent on
 * every request when several replicas share the fleet. Real units ignore it; the simulator's write
 * journal records it, so tests can tell which replica wrote (docs/cluster.md).
 */
export const MEMBER_HEADER = "x-pdu-bridge-member";

/** Switching actions every driver supports. */
export type SwitchAction = "on" | "off" | "reboot";

/**
 * One outlet to write to. `route` is the driver's own data from the snapshot's device (how to reach
 * it, e.g. a OneView member's proxy ports), handed back untouched; null: the polled unit itself.
 */
export interface OutletTarget {
  readonly deviceId: string;
  readonly index: number;
  readonly route: DeviceRoute | null;
}

/** What an outlet does when the PDU powers up. */
export type PoaAction = "on" | "off" | "last";

/**
 * Outlet settings an operator may change (docs/control.md, Settings writes): label, delays in whole seconds, power-on
 * action. The control core validates them (src/control/settings.ts) before a driver sees them.
 */
export interface OutletSettings {
  readonly label?: string;
  readonly onDelay?: number;
  readonly offDelay?: number;
  readonly rebootDelay?: number;
  readonly poaAction?: PoaAction;
}

/**
 * A thing with a label other than an outlet: a device, one of its entities (a breaker, a phase) or a
 * OneView group (on the master). `route` as in {@link OutletTarget}.
 */
export type LabelTarget =
  | { readonly kind: "device"; readonly deviceId: string; readonly route: DeviceRoute | null }
  | {
      readonly kind: "entity";
      readonly deviceId: string;
      readonly entityKey: string;
      readonly route: DeviceRoute | null;
    }
  | { readonly kind: "group"; readonly groupKey: string };

/**
 * What logging in with the configured credentials came to ({@link PduDriver.verifyCredentials}).
 * `refused` says which credential the PDU refused: `password` (a wrong password) or `user` (an
 * unknown or disabled user, or one without permission to control); null when the check could not
 * be made (the PDU did not answer, or answered something else): try again later. `reason` is safe
 * to show (no secret).
 */
export type CredentialsVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly refused: "password" | "user" | null; readonly reason: string };

/**
 * One configured PDU instance as a family's driver sees it. Every failure is a PduError
 * (./errors.ts) whose kind the control core maps to a status; a caller's abort rejects with its
 * reason. Writes that must not run twice (reboot, statistics reset) are never re-sent by a driver.
 */
export interface PduDriver {
  readonly instanceId: string;
  /** Manufacturer and group model for Home Assistant discovery; every snapshot carries the same. */
  readonly vendor: Vendor;
  /**
   * One poll: the PDU's state as a frozen {@link Snapshot}. When the PDU answered exactly as on the
   * previous poll, a driver may return the previous snapshot restamped (model.ts `restamp`), so the
   * store and the publisher see the content is unchanged and skip their work.
   */
  poll(signal?: AbortSignal): Promise<Snapshot>;
  /** Switches or power-cycles one outlet now. */
  controlOutlet(target: OutletTarget, action: SwitchAction, signal?: AbortSignal): Promise<void>;
  /**
   * Resets the outlet's accumulated statistics (energy). A driver says whether it can in its
   * snapshots' `Device.canResetOutletEnergy` (the surfaces offer the command only there); where it
   * cannot, it refuses (`refused`, naming the model and why) before anything is sent.
   */
  resetOutletEnergy(target: OutletTarget, signal?: AbortSignal): Promise<void>;
  /** Changes outlet settings; absent: the family cannot, and the request is refused (502). */
  setOutletSettings?(target: OutletTarget, settings: OutletSettings, signal?: AbortSignal): Promise<void>;
  /** Renames a device, an entity or a group; absent: the family cannot, and the request is refused. */
  setLabel?(target: LabelTarget, label: string, signal?: AbortSignal): Promise<void>;
  /**
   * Logs in with the configured credentials and nothing else, so that a wrong password is found at
   * start rather than at the first command; absent: the family needs no login, or cannot check it
   * on its own. Never rejects: every outcome is a {@link CredentialsVerdict}.
   */
  verifyCredentials?(signal?: AbortSignal): Promise<CredentialsVerdict>;
  /**
   * The time between polls changed (a live configuration change); a driver may then keep its read
   * connection between polls or close it after each.
   */
  setPollInterval?(ms: number): void;
  /** Closes every connection; requests still in flight fail. */
  close(): Promise<void>;
}
