/**
 * What the page knows: the fleet's statuses, the snapshot of the instance on screen, the active
 * alarms, the route, and the bootstrap data it was served (the command rows, the alarm lines).
 */
import type {
  AssetsEventData,
  ConsoleBootstrap,
  SnapshotEventData,
  WireActiveAlarm,
  WireCommand,
  WireDevice,
  WireInstanceStatus,
} from "../wire.js";

export type Route =
  | { readonly view: "fleet" }
  | { readonly view: "assets" }
  | { readonly view: "feeds" }
  | { readonly view: "asset"; readonly assetId: string }
  | { readonly view: "pdu" | "groups"; readonly instanceId: string }
  | {
      readonly view: "outlet";
      readonly instanceId: string;
      readonly deviceId: string;
      readonly index: number;
    };

/** The page's bootstrap data (a JSON block in the HTML); empty lists when it is missing. */
function readBootstrap(): ConsoleBootstrap {
  const text = document.getElementById("bootstrap")?.textContent ?? "";
  try {
    const data = JSON.parse(text) as ConsoleBootstrap;
    if (Array.isArray(data.commands?.outlet) && Array.isArray(data.commands.group)) return data;
  } catch {
    // no bootstrap: no controls
  }
  // Whether sign-in is on is then unknown: the session is asked for.
  return {
    commands: { outlet: [], group: [] },
    alarms: { warnPercent: 80, criticalPercent: 95 },
    signIn: true,
  };
}

export const bootstrap: ConsoleBootstrap = readBootstrap();

export const state = {
  statuses: new Map<string, WireInstanceStatus>(),
  snapshot: null as SnapshotEventData | null,
  route: { view: "fleet" } as Route,
  /** Active alarms of every instance, by `<instance>\u0000<id>`. */
  alarms: new Map<string, WireActiveAlarm>(),
};

export const alarmKey = (a: WireActiveAlarm): string => `${a.instanceId}\u0000${a.id}`;

/** The command rows of a kind of target, in table order. */
export const commandsOf = (kind: "outlet" | "group"): readonly WireCommand[] => bootstrap.commands[kind];

/**
 * The outlet commands the device can carry out: a row that needs a capability the device lacks
 * (an SNMP family without a per-outlet energy reset) has no button at all, as a device with outlet
 * control disabled has none.
 */
export const outletCommandsOf = (device: WireDevice): readonly WireCommand[] =>
  bootstrap.commands.outlet.filter((row) => row.needs === null || device[row.needs]);

export const commandOf = (name: string): WireCommand | undefined =>
  bootstrap.commands.outlet.find((c) => c.name === name) ??
  bootstrap.commands.group.find((c) => c.name === name);

export const href = {
  fleet: () => "#/",
  assets: () => "#/assets",
  asset: (id: string) => `#/assets/${encodeURIComponent(id)}`,
  feeds: () => "#/feeds",
  pdu: (id: string) => `#/i/${encodeURIComponent(id)}`,
  groups: (id: string) => `#/i/${encodeURIComponent(id)}/groups`,
  outlet: (id: string, deviceId: string, index: number) =>
    `#/i/${encodeURIComponent(id)}/o/${encodeURIComponent(deviceId)}/${index}`,
};

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  try {
    const [kind, id, sub, deviceId, index] = parts.map(decodeURIComponent);
    if (kind === "assets") return id === undefined ? { view: "assets" } : { view: "asset", assetId: id };
    if (kind === "feeds" && id === undefined) return { view: "feeds" };
    if (kind === "i" && id !== undefined) {
      if (sub === undefined) return { view: "pdu", instanceId: id };
      if (sub === "groups") return { view: "groups", instanceId: id };
      if (sub === "o" && deviceId !== undefined && index !== undefined && /^\d{1,6}$/.test(index)) {
        return { view: "outlet", instanceId: id, deviceId, index: Number(index) };
      }
    }
  } catch {
    // a malformed escape: the fleet
  }
  return { view: "fleet" };
}

/** A view of the page: built once for its structure, then updated in place. */
export interface View {
  /** Something changed (statuses of these instances, or everything when null), or a second passed. */
  update(changed: ReadonlySet<string> | null): void;
  /** Assets changed, or the feed-loss projection was made again (the `assets` event). */
  assets?(data: AssetsEventData): void;
  /** The view is left: listeners and timers go. */
  destroy?(): void;
}
