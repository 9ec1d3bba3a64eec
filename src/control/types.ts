/**
 * The control core's contract, shared by its two surfaces (REST and MQTT) so that the rules are
 * written once in src/control/ and each surface only translates requests and outcomes.
 */

import type { ControlSource, ControlTarget, SettingsTarget } from "../bus.js";
import type { OutletSettings } from "../pdu/driver.js";
import type { CommandName } from "./commands.js";

/** The command names (./commands.ts is the one table of commands). */
export { GROUP_ACTIONS, OUTLET_ACTIONS } from "./commands.js";
export type OutletControlAction = CommandName;

/**
 * What a request names and who sent it: defined beside the bus's `control` event, which carries
 * them (src/bus.ts), and part of this contract.
 */
export type { ConsoleUser, ControlSource, ControlTarget, SettingsTarget } from "../bus.js";

export interface ControlRequest {
  readonly instanceId: string;
  readonly target: ControlTarget;
  /** Validated against the target kind by the core (resetStats is outlet-only). */
  readonly action: string;
  readonly source: ControlSource;
  /**
   * The command's id among several replicas: the once-only id of a reboot or resetStats
   * (docs/cluster.md), kept when a request is forwarded to the replica holding the instance and
   * when the forwarding is retried, so the command never runs twice. 1-48 characters of
   * A-Za-z0-9_-; the core makes one when it is absent.
   */
  readonly commandId?: string;
  /**
   * Once-only ids for on and off too (asset control and sequences, src/control/asset-control.ts):
   * each outlet's write is recorded under `<commandId>-<k>` by the fencing among replicas and never
   * sent twice, as a reboot's is. Needs `commandId`.
   */
  readonly once?: boolean;
  /** The asset whose command this write is part of: named in the audit line. */
  readonly asset?: string;
  /**
   * The write is the off of the asset's own reboot (confirmed for a protected asset): the
   * protected-asset rule leaves that asset out, every other asset the outlets feed is still guarded.
   */
  readonly assetCycle?: boolean;
}

/** What a write must wait for before it goes to a PDU when several replicas share the fleet. */
export interface WriteGrant {
  /** Aborted when the write must end at once (the lease's validity end, or the lease lost). */
  readonly signal: AbortSignal;
  /** Throws unless the write may still start now (checked right before the driver call). */
  assertMayStart(): void;
  /** The write ended, whatever its outcome. */
  done(): void;
}

/**
 * Fencing of PDU writes (the cluster, src/cluster/): a conditional renewal of the instance's lease
 * before each write, which throws when this replica may not write (not the holder, the renewal
 * failed, a once-only id used before, stopping).
 */
export interface WriteFence {
  /**
   * `onceId`: a reboot's or resetStats's once-only id; `hold`: a reboot's outlet (any key) and its
   * reboot hold (ms), recorded where the next holder reads it (docs/cluster.md, "The reboot hold").
   */
  beforeWrite(
    instanceId: string,
    options?: { onceId?: string; hold?: { key: string; ms: number } },
  ): Promise<WriteGrant>;
}

export interface OutletResult {
  readonly deviceId: string;
  readonly index: number;
  readonly ok: boolean;
  /** Readable failure, when !ok. */
  readonly error?: string;
}

/**
 * Outcome of a control request. `status` is the HTTP status the REST surface answers with
 * (docs/control.md, "Outcomes"); the MQTT surface logs the same outcome.
 */
export type ControlOutcome =
  | {
      readonly ok: true;
      readonly status: 200;
      readonly instanceId: string;
      readonly target: ControlTarget;
      readonly action: string;
      /** Every outlet acted on (one for an outlet target). */
      readonly outlets: readonly OutletResult[];
    }
  | {
      readonly ok: false;
      /** 400 bad action, 404 unknown instance/device/outlet/group, 409 actions disabled, 503 not polled yet, 502 PDU refused/failed, 504 PDU time-out. */
      readonly status: 400 | 404 | 409 | 502 | 503 | 504;
      readonly title: string;
      /** What went wrong and what to do, safe to show to the caller. */
      readonly detail: string;
      /** Seconds, for 503 (and a 409 `relay-protection`: when the outlet may switch again). */
      readonly retryAfter?: number;
      /** Per-outlet results of a partially failed group action. */
      readonly outlets?: readonly OutletResult[];
      /**
       * A more specific kind of problem than the status says (the REST problem `type` ends with it):
       * `outcome-unknown` (502: the write may or may not have been carried out; check the outlet
       * before retrying), `superseded` (409), `outlet-busy` (409: a reboot already running or within
       * its reboot delay, or another command already waiting), `expired` (503: waited too long),
       * `not-held` (503: among several replicas, this one may not write to the instance now;
       * nothing was sent), `relay-protection` (409: the outlet switched less than its instance's
       * `RelayProtection` ago; `retryAfter` says when it may; nothing was sent).
       */
      readonly problem?: ControlProblem;
    };

export type ControlProblem =
  | "outcome-unknown"
  | "superseded"
  | "outlet-busy"
  | "expired"
  | "unsafe-name"
  | "protected"
  | "not-held"
  | "relay-protection"
  | "confirm-required"
  | "asset-busy";

export interface SettingsRequest {
  readonly instanceId: string;
  readonly target: SettingsTarget;
  /** Field → value as received (a parsed JSON body, or one MQTT setting); the core validates it. */
  readonly settings: Readonly<Record<string, unknown>>;
  readonly source: ControlSource;
}

/**
 * A settings write that merged several requests (./settings-bursts.ts): how many, and whether this
 * request was the burst's first (the one audited).
 */
export interface SettingsBurst {
  readonly requests: number;
  readonly first: boolean;
}

/**
 * Outcome of a settings write: 200 echoes the settings written (a burst's merged settings);
 * refusals as for control. `burst` when the write merged several requests.
 */
export type SettingsOutcome = (
  | {
      readonly ok: true;
      readonly status: 200;
      readonly instanceId: string;
      readonly target: SettingsTarget;
      readonly settings: OutletSettings;
    }
  | Extract<ControlOutcome, { ok: false }>
) & { readonly burst?: SettingsBurst };

export interface ControlService {
  execute(request: ControlRequest): Promise<ControlOutcome>;
  /** Settings writes; absent: this control service has none (the surfaces answer 503). */
  applySettings?(request: SettingsRequest): Promise<SettingsOutcome>;
}
