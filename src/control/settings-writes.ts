/**
 * Settings writes (docs/control.md, "Settings writes"): labels, delays and the power-on action. The
 * same checks as a command (instance, ActionsEnabled, polled, target in the latest snapshot), the
 * values checked by the settings table (./settings.ts), the write merged with the target's burst
 * (./settings-bursts.ts: at most one write per target per second, the last value wins) and made in
 * the target's turn (an outlet's turn is the one its commands take), then an early poll, which shows
 * the new values: the PDU reports settings at once, unlike a switched state.
 */
import type { Config } from "../config/schema.js";
import type { Logger } from "../log.js";
import type { OutletSettings } from "../pdu/driver.js";
import type { SnapshotStore } from "../poller/store.js";
import { describeTarget } from "./audit.js";
import type { CommandDriver } from "./commands.js";
import type { OutletOff } from "../assets/protect.js";
import { assetProtection, type AssetBookView } from "./asset-guard.js";
import { badIndex, polledInstance, protectedSettingsRefusal } from "./checks.js";
import {
  controlUnavailable,
  refuse,
  settingsFailure,
  stoppingRefusal,
  type Refusal,
  type WriteResult,
} from "./outcomes.js";
import type { SettingsBursts } from "./settings-bursts.js";
import {
  protectedSettingsProblem,
  SETTING_NAMES,
  settingsProblem,
  SETTINGS_ACTION,
  SETTINGS_TURN,
} from "./settings.js";
import type { WritesInFlight } from "./stopping.js";
import { planSettings, type SettingsPlan } from "./targets.js";
import type { SettingsOutcome, SettingsRequest } from "./types.js";
import type { Writer } from "./writes.js";

export interface SettingsWriteDeps {
  readonly config: Config;
  readonly store: SnapshotStore;
  /** The instance's driver, while this process owns the instance; else undefined (503). */
  client(instanceId: string): CommandDriver | undefined;
  readonly logger: Logger;
  readonly writer: Writer;
  readonly inFlight: WritesInFlight;
  readonly bursts: SettingsBursts;
  /** The assets' book, for the protected-asset rule; null: nothing guarded. */
  assets(): AssetBookView | null;
  /** The offs the core let through whose end the book has not seen (./asset-guard.ts). */
  offsInFlight(): readonly OutletOff[];
}

/** A settings write: checked, then written in its target's turn; never rejects. */
export async function applySettings(
  deps: SettingsWriteDeps,
  request: SettingsRequest,
): Promise<SettingsOutcome> {
  const { target } = request;
  const allowed = target.kind === "outlet" ? SETTING_NAMES : (["label"] as const);
  const problem = settingsProblem(request.settings, allowed);
  if (problem !== null) return refuse(400, "Bad settings", `${problem}; nothing was sent`);
  const index = badIndex(target);
  if (index !== null) return index;
  const settings = request.settings as OutletSettings;

  const polled = polledInstance(deps.config, deps.store, request.instanceId);
  if ("status" in polled) return polled;
  const { id, snapshot } = polled;
  const planned = planSettings(snapshot, target, id);
  if ("status" in planned) return planned;
  if (planned.kind === "outlet") {
    const guarded =
      protectedSettingsRefusal(snapshot, planned.outlet, settings, id) ??
      holdsAssetOff(deps, id, planned.outlet, settings);
    if (guarded !== null) return guarded;
  }
  const call = driverCall(deps.client(id), planned, settings, id);
  if (typeof call !== "function") return call;
  const what = (names: readonly string[]) =>
    `${SETTINGS_ACTION} ${names.join(", ")} on ${describeTarget(planned.resolved)} of instance ${id}`;
  if (deps.inFlight.stopping) return stoppingRefusal(what(Object.keys(settings)));

  const written = await deps.bursts.submit(planned.key, { ...settings }, (merged) =>
    writeMerged(deps, id, planned, merged),
  );
  if (written.first) deps.writer.repollAfter(id, [written.result]);
  const burst = written.requests > 1 ? { burst: { requests: written.requests, first: written.first } } : {};
  const result = written.result;
  if (result.ok) {
    const done = written.settings as OutletSettings;
    return { ok: true, status: 200, instanceId: id, target: planned.resolved, settings: done, ...burst };
  }
  return { ...settingsFailure(what(Object.keys(written.settings)), result), ...burst };
}

/**
 * 409 when the settings would hold the outlet off (what a `Protected` outlet refuses: a power-on
 * action of off, an on or reboot delay; ./settings.ts) and it is the last live cord of a protected
 * asset: such a setting counts as an off for the protected-asset rule (./asset-guard.ts).
 */
function holdsAssetOff(
  deps: SettingsWriteDeps,
  id: string,
  outlet: { readonly deviceId: string; readonly index: number },
  settings: OutletSettings,
): Refusal | null {
  const problem = protectedSettingsProblem(settings);
  if (problem === null) return null;
  const what = `${SETTINGS_ACTION} ${problem} on outlet ${outlet.deviceId}/${outlet.index} of instance ${id}`;
  return assetProtection(deps.assets(), id, [outlet], what, { inFlight: deps.offsInFlight() });
}

/** The write of a burst's merged settings, in the target's turn; never rejects. */
function writeMerged(
  deps: SettingsWriteDeps,
  id: string,
  planned: SettingsPlan,
  settings: OutletSettings,
): Promise<WriteResult> {
  const call = driverCall(deps.client(id), planned, settings, id);
  if (typeof call !== "function") return Promise.resolve({ ok: false, kind: "failed", error: call.detail });
  deps.logger.debug({ instance: id, target: describeTarget(planned.resolved) }, "control: writing settings");
  return deps.writer.inTurn(id, planned.key, SETTINGS_TURN, call);
}

/** The driver call that writes the settings, or why there is none (503 no driver, 502 not supported). */
function driverCall(
  client: CommandDriver | undefined,
  planned: SettingsPlan,
  settings: OutletSettings,
  id: string,
): ((signal: AbortSignal) => Promise<void>) | Refusal {
  if (client === undefined) return controlUnavailable(id);
  const call =
    planned.kind === "outlet"
      ? client.setOutletSettings?.bind(client, planned.outlet, settings)
      : client.setLabel?.bind(client, planned.label, settings.label ?? "");
  if (call !== undefined) return call;
  return refuse(
    502,
    "Not supported",
    `the driver of instance ${id} cannot change settings of ${describeTarget(planned.resolved)}; nothing was sent`,
  );
}
