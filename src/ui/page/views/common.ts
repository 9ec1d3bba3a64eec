/** Pieces every instance view shares: its header (health, staleness, tabs) and the control note. */
import type { SnapshotEventData, WireInstanceStatus } from "../../wire.js";
import { keyPrompt, mayControl } from "../access.js";
import { h, setClass, setText } from "../dom.js";
import { ago, dataAge, duration, elsewhere, HEALTH_TEXT, healthOf, isStale, polledBy } from "../format.js";
import { signedIn, signInEnabled } from "../session.js";
import { href, state } from "../state.js";

/** The line above a PDU's content: control on/off and the key. */
export function controlNote(snapshot: SnapshotEventData): HTMLElement {
  if (!snapshot.actionsEnabled) {
    return h("p", { class: "note" }, "Control is off for this PDU (ActionsEnabled: false): values only.");
  }
  if (signInEnabled() && !mayControl()) {
    return h(
      "p",
      { class: "note" },
      `Signed in as ${signedIn()?.user.name ?? "a viewer"} with the viewer role: values only, no control.`,
    );
  }
  if (!mayControl()) {
    return h(
      "p",
      { class: "note" },
      "Enter the API key to switch, reboot or reset outlets. ",
      h("button", { type: "button", class: "cmd", onClick: () => keyPrompt.open() }, "Enter API key"),
    );
  }
  return h("p", { class: "note" }, "Control is on: every action asks for confirmation first.");
}

/** Why a view has nothing to show yet. */
export function notReady(instanceId: string): HTMLElement {
  const status = state.statuses.get(instanceId);
  if (state.statuses.size > 0 && !status)
    return h("p", { class: "note" }, `No instance named ${instanceId}.`);
  // Among several replicas the header's banner says who holds it, and why its state is not here.
  if (status?.replica?.here === false)
    return h("p", { class: "note" }, "Its values show here once the replica that polls it has sent them…");
  if (status?.status === "failing")
    return h("p", { class: "banner" }, `Never polled: ${status.lastError ?? "the PDU does not answer"}.`);
  return h("p", { class: "note" }, "Waiting for the first poll…");
}

/**
 * The banner of an instance whose data is not live: offline (with the error) or stale, with its
 * age; among several replicas, held where its state cannot be had (nothing of it is shown).
 */
export function staleBanner(s: WireInstanceStatus | undefined, now: number): string {
  if (s === undefined) return "";
  const away = elsewhere(s);
  if (away !== null) return `No values shown: ${away}.`;
  const age = dataAge(s, now);
  if (s.status === "failing") {
    const polls = s.consecutiveFailures === 1 ? "the last poll" : `the last ${s.consecutiveFailures} polls`;
    const data =
      age === null
        ? "It has never been polled: there are no values yet."
        : `Values below are from the last good poll, ${duration(age)} ago.`;
    return `Offline: ${polls} failed (${s.lastError ?? "no answer"}). ${data}`;
  }
  if (isStale(s, now) && age !== null)
    return `Stale: no successful poll for ${duration(age)} (every ${s.pollInterval} s expected). Values below are ${duration(age)} old.`;
  return "";
}

export interface InstanceHeader {
  readonly elements: HTMLElement[];
  update(): void;
}

export function instanceHeader(
  instanceId: string,
  snapshot: SnapshotEventData | null,
  current: "pdu" | "groups",
): InstanceHeader {
  const badge = h("span", { class: "badge" });
  const meta = h("p", { class: "meta" });
  const banner = h("p", { class: "banner", role: "status", hidden: true });
  const tabs = h(
    "nav",
    { class: "tabs", "aria-label": "PDU views" },
    h("a", { href: href.pdu(instanceId), "aria-current": current === "pdu" ? "page" : null }, "Outlets"),
    snapshot?.mode === "oneview"
      ? h(
          "a",
          { href: href.groups(instanceId), "aria-current": current === "groups" ? "page" : null },
          "Groups",
        )
      : null,
  );
  const update = () => {
    const now = Date.now();
    const status = state.statuses.get(instanceId);
    const snap = state.snapshot?.instanceId === instanceId ? state.snapshot : null;
    const health = status === undefined ? "pending" : healthOf(status, now);
    setClass(badge, `badge ${health}`);
    setText(badge, HEALTH_TEXT[health]);
    const unit = snap
      ? [snap.unit.label, snap.unit.model, snap.mode === "oneview" ? "OneView cluster" : "single unit"]
          .filter(Boolean)
          .join(" · ")
      : "";
    const polled =
      status && status.replica?.state !== "none"
        ? `last good poll ${ago(status.lastSuccessUtc, now)} (every ${status.pollInterval} s)`
        : "";
    setText(meta, [unit, polled, status ? polledBy(status) : ""].filter(Boolean).join(" · "));
    const login = status?.loginError ?? null;
    const stale = staleBanner(status, now);
    const text = [stale, login === null ? "" : `Control will fail: ${login}.`].filter(Boolean).join(" ");
    banner.hidden = text === "";
    setText(banner, text);
    setClass(banner, status?.status === "failing" || login !== null ? "banner" : "banner stale");
    document.getElementById("main")?.classList.toggle("stale", status !== undefined && isStale(status, now));
  };
  update();
  return { elements: [h("h1", {}, instanceId, " ", badge), meta, banner, tabs], update };
}
