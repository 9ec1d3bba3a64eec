/**
 * The page's only connections: the service's own REST API and event stream (same origin). The API
 * key lives in sessionStorage only (gone when the tab closes) and is sent as X-Api-Key.
 */
import type {
  AlarmEventData,
  AlarmsEventData,
  AssetsEventData,
  ControlEventData,
  OutletHistory,
  RecentEventData,
  SnapshotEventData,
  StatusEventData,
  TrapEventData,
} from "../wire.js";
import { API_PATHS, API_ROUTES, fillPath } from "../../http/api/paths.js";
import { sessionHeaders, signIn, signInEnabled } from "./session.js";

const KEY_ITEM = "pdu-bridge.apiKey";

export const apiKey = {
  get(): string | null {
    try {
      return sessionStorage.getItem(KEY_ITEM);
    } catch {
      return null;
    }
  },
  set(key: string): void {
    sessionStorage.setItem(KEY_ITEM, key);
  },
  clear(): void {
    sessionStorage.removeItem(KEY_ITEM);
  },
};

export interface ControlAnswer {
  readonly ok: boolean;
  readonly status: number;
  /** The problem's detail when refused. */
  readonly detail: string;
}

const seg = encodeURIComponent;

/** POSTs a control action; never throws (a network failure is an answer too). */
export async function control(
  instanceId: string,
  target: { deviceId: string; index: number } | { groupKey: string },
  action: string,
): Promise<ControlAnswer> {
  // Signed in: the session's cookie and CSRF token; else the API key.
  const key = signInEnabled() ? null : apiKey.get();
  if (!signInEnabled() && key === null) return { ok: false, status: 0, detail: "enter the API key first" };
  const route = "groupKey" in target ? API_ROUTES.groupControl : API_ROUTES.outletControl;
  const path =
    "groupKey" in target
      ? fillPath(route.url, { id: instanceId, groupKey: target.groupKey })
      : fillPath(route.url, { id: instanceId, deviceId: target.deviceId, index: target.index });
  try {
    const response = await fetch(path, {
      method: route.method,
      headers: {
        "content-type": "application/json",
        ...(key === null ? sessionHeaders() : { "x-api-key": key }),
      },
      body: JSON.stringify({ action }),
      cache: "no-store",
    });
    if (response.ok) return { ok: true, status: response.status, detail: "" };
    if (response.status === 401 && signInEnabled()) signIn();
    return { ok: false, status: response.status, detail: await problemDetail(response) };
  } catch {
    return { ok: false, status: 0, detail: "the service did not answer; check the connection and try again" };
  }
}

/** The `detail` of a problem answer, else the HTTP status. */
async function problemDetail(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { detail?: unknown };
    if (typeof body.detail === "string") return body.detail;
  } catch {
    // not a problem document: the status says it
  }
  return `HTTP ${response.status}`;
}

/** What checking a key against the service found. */
export type KeyCheck =
  { readonly ok: true } | { readonly ok: false; readonly status: number; readonly detail: string };

/** Asks the service whether `key` is its API key (`GET /api/v1/key`); never throws. */
export async function checkKey(key: string): Promise<KeyCheck> {
  try {
    const response = await fetch(API_PATHS.keyCheck, { headers: { "x-api-key": key }, cache: "no-store" });
    if (response.status === 204) return { ok: true };
    return { ok: false, status: response.status, detail: await problemDetail(response) };
  } catch {
    return { ok: false, status: 0, detail: "the service did not answer; check the connection and try again" };
  }
}

/**
 * POSTs an asset's action (`confirm` for a protected asset's reboot) through the asset control
 * route, which checks every cord and the protected-asset rule; never throws.
 */
export async function assetControl(
  assetId: string,
  action: string,
  confirm: boolean,
): Promise<ControlAnswer> {
  const key = signInEnabled() ? null : apiKey.get();
  if (!signInEnabled() && key === null) return { ok: false, status: 0, detail: "enter the API key first" };
  const route = API_ROUTES.assetControl;
  try {
    const response = await fetch(fillPath(route.url, { id: assetId }), {
      method: route.method,
      headers: {
        "content-type": "application/json",
        ...(key === null ? sessionHeaders() : { "x-api-key": key }),
      },
      body: JSON.stringify(confirm ? { action, confirm } : { action }),
      cache: "no-store",
    });
    if (response.ok) return { ok: true, status: response.status, detail: "" };
    if (response.status === 401 && signInEnabled()) signIn();
    return { ok: false, status: response.status, detail: await problemDetail(response) };
  } catch {
    return { ok: false, status: 0, detail: "the service did not answer; check the connection and try again" };
  }
}

/** A read of the REST API (the session's cookie goes with it), or null when it failed. */
export async function readJson<T>(path: string): Promise<T | null> {
  try {
    const key = signInEnabled() ? null : apiKey.get();
    const response = await fetch(path, {
      cache: "no-store",
      headers: key === null ? {} : { "x-api-key": key },
    });
    return response.ok ? ((await response.json()) as T) : null;
  } catch {
    return null;
  }
}

export async function outletHistory(
  instanceId: string,
  deviceId: string,
  index: number,
): Promise<OutletHistory | null> {
  try {
    const response = await fetch(fillPath(API_PATHS.outletHistory, { id: instanceId, deviceId, index }), {
      cache: "no-store",
    });
    return response.ok ? ((await response.json()) as OutletHistory) : null;
  } catch {
    return null;
  }
}

export interface FeedHandlers {
  status(this: void, data: StatusEventData): void;
  snapshot(this: void, data: SnapshotEventData): void;
  control(this: void, data: ControlEventData): void;
  alarm(this: void, data: AlarmEventData): void;
  trap(this: void, data: TrapEventData): void;
  alarms(this: void, data: AlarmsEventData): void;
  recent(this: void, data: RecentEventData): void;
  assets(this: void, data: AssetsEventData): void;
  connection(this: void, live: boolean): void;
}

/**
 * One event stream at a time. EventSource reconnects by itself after a dropped connection; when the
 * service refused the stream (429 or 503: too many open) it gives up, so this reopens it a little
 * later. A stream that reached its maximum age ends with a `reconnect` event: reopened at once.
 */
export class Feed {
  #source: EventSource | null = null;
  #retry: number | undefined;
  #query = "";
  readonly #handlers: FeedHandlers;

  constructor(handlers: FeedHandlers) {
    this.#handlers = handlers;
  }

  /** Streams status and control events, plus the snapshots of `instanceId` (none when null). */
  open(instanceId: string | null): void {
    const query = instanceId === null ? "?snapshots=false" : `?instance=${seg(instanceId)}`;
    if (this.#source && query === this.#query) return;
    this.#query = query;
    this.#connect();
  }

  #connect(): void {
    this.#source?.close();
    window.clearTimeout(this.#retry);
    const source = new EventSource(`${API_PATHS.events}${this.#query}`);
    this.#source = source;
    const parse =
      <T>(handler: (data: T) => void) =>
      (event: MessageEvent<string>) => {
        try {
          handler(JSON.parse(event.data) as T);
        } catch (error) {
          console.error("pdu-bridge console: bad event", error);
        }
      };
    source.addEventListener("status", parse(this.#handlers.status));
    source.addEventListener("snapshot", parse(this.#handlers.snapshot));
    source.addEventListener("control", parse(this.#handlers.control));
    source.addEventListener("alarm", parse(this.#handlers.alarm));
    source.addEventListener("trap", parse(this.#handlers.trap));
    source.addEventListener("alarms", parse(this.#handlers.alarms));
    source.addEventListener("recent", parse(this.#handlers.recent));
    source.addEventListener("assets", parse(this.#handlers.assets));
    // The service ends a stream at its maximum age right after this event: a new one at once, so
    // the page never shows a gap (the full current state comes with it).
    source.addEventListener("reconnect", () => {
      if (this.#source === source) this.#connect();
    });
    source.addEventListener("open", () => this.#handlers.connection(true));
    source.addEventListener("error", () => {
      this.#handlers.connection(false);
      if (source.readyState === EventSource.CLOSED && this.#source === source) {
        this.#retry = window.setTimeout(() => this.#connect(), 5000);
      }
    });
  }
}
