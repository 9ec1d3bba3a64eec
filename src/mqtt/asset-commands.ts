/**
 * Asset commands over MQTT (docs/assets.md "Asset control"): `<P>/$assets/<asset>/set`
 * with `on`, `off` or `reboot`; the reboot of a protected asset needs the payload `reboot confirm`
 * (as REST needs `"confirm": true`), and `reboot` alone is refused for it. They go to asset control, which checks the
 * whole command, writes each cord through the control path and audits each cord's write; what is
 * refused here (too large, retained, not an asset command topic, a bad payload, no asset control)
 * is audited here, folded like the outlets' refusals.
 *
 * Among several replicas every replica receives the command; the one holding the instance of the
 * asset's first cord takes it (for an asset not configured, the holder of the first configured
 * instance, which refuses it), and asset control hands the other cords to their holders.
 */
import type { EventBus } from "../bus.js";
import type { Config } from "../config/schema.js";
import type { AssetControl } from "../control/asset-control.js";
import { auditControl, type AuditSink } from "../control/audit.js";
import type { Logger } from "../log.js";
import { OWN_ALL, type Ownership } from "../ownership.js";
import { describeError } from "../pdu/errors.js";
import { MAX_COMMAND_PAYLOAD } from "./commands.js";
import { ASSET_COMMANDS, ASSETS_LEVEL } from "./topics.js";

const ASSET_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** The payloads of `…/set` (lowercase, spaces folded) and what each asks. */
const ASSET_PAYLOADS: ReadonlyMap<string, { action: "on" | "off" | "reboot"; confirm: boolean }> = new Map([
  ["on", { action: "on", confirm: false }],
  ["off", { action: "off", confirm: false }],
  ["reboot", { action: "reboot", confirm: false }],
  ["reboot confirm", { action: "reboot", confirm: true }],
]);

export interface AssetCommandsOptions {
  readonly parent: string;
  readonly config: Config;
  readonly logger: Logger;
  readonly bus: EventBus;
  readonly ownership?: Ownership;
}

/** What the handler needs of asset control. */
export type AssetCommandControl = Pick<AssetControl, "execute" | "book">;

export class AssetCommands {
  readonly #prefix: string;
  readonly #config: Config;
  readonly #audit: AuditSink;
  readonly #ownership: Ownership;
  #control: AssetCommandControl | null = null;

  constructor(options: AssetCommandsOptions) {
    this.#prefix = `${options.parent}/${ASSETS_LEVEL}/`;
    this.#config = options.config;
    this.#audit = { logger: options.logger, bus: options.bus };
    this.#ownership = options.ownership ?? OWN_ALL;
  }

  attach(control: AssetCommandControl | null): void {
    this.#control = control;
  }

  subscriptions(): string[] {
    return ASSET_COMMANDS.map((c) => `${this.#prefix}+/${c}`);
  }

  /** Whether the topic is under the assets' level (commands or not: nothing else there is received). */
  accepts(topic: string): boolean {
    return topic.startsWith(this.#prefix);
  }

  /** Handles one received message. Never throws; the returned promise settles after the audit. */
  async handle(topic: string, payload: Buffer, retained: boolean): Promise<void> {
    const source = { surface: "mqtt", topic } as const;
    const levels = topic.slice(this.#prefix.length).split("/");
    const asset = levels.length === 2 && ASSET_ID.test(levels[0] ?? "") ? levels[0]! : null;
    const command = levels[1] ?? "";
    if (asset !== null && !this.#takes(asset)) return;
    const refuse = (status: number, detail: string, action: string | null = null) => {
      // Folded per status: the asset and the payload are the sender's choice.
      auditControl(
        this.#audit,
        {
          source,
          instanceId: null,
          target: null,
          action,
          status,
          detail,
          ...(asset === null ? {} : { asset }),
        },
        { key: `mqtt|asset|${status}|${action ?? ""}` },
      );
    };
    if (payload.length > MAX_COMMAND_PAYLOAD)
      return refuse(413, `payload of ${payload.length} bytes is over the ${MAX_COMMAND_PAYLOAD}-byte limit`);
    if (asset === null || !ASSET_COMMANDS.includes(command))
      return refuse(400, "not an asset command topic: expected <parent>/$assets/<asset>/set");
    if (retained) return refuse(400, "retained command ignored (it would repeat on every reconnect)");
    const text = payload.toString("utf8").trim().toLowerCase().split(/\s+/).join(" ");
    const parsed = ASSET_PAYLOADS.get(text);
    if (parsed === undefined)
      return refuse(
        400,
        `payload ${JSON.stringify(text.slice(0, 40))} is not one of ${[...ASSET_PAYLOADS.keys()].join(", ")}`,
      );
    const { action, confirm } = parsed;
    const control = this.#control;
    if (control === null) return refuse(503, "asset control is not available", action);
    try {
      // Asset control audits the command: each cord's write, or its refusal.
      await control.execute({ assetId: asset, action, confirm, source });
    } catch (error) {
      refuse(500, `asset control failed: ${describeError(error)}`, action);
    }
  }

  /** Whether this process takes the asset's commands (see the file's comment). */
  #takes(asset: string): boolean {
    const first = this.#control?.book()?.model.assets.get(asset)?.cords[0]?.instance;
    const instance = first ?? this.#config.instances[0]?.id;
    return instance === undefined || this.#ownership.owns(instance);
  }
}
