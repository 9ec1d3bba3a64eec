/**
 * The driver's walk of a profile's tables against agents that answer GETBULK in different ways
 * (the bench's responder serving the simulator's APC rPDU2 unit, 24 outlets): the requests of a
 * poll (the tables walked together, the repetitions fitted to the previous poll's rows), an agent
 * that sends fewer varbinds than asked (the walk continues where the answer ended) and one that
 * answers tooBig to large requests (the walk asks for less). Each reads every outlet. A caller's
 * abort ends a walk at once, at any of its requests, and a walk leaves no listener on the signal;
 * a signal shared by many polls at once raises no warning.
 */
import { createSocket } from "node:dgram";
import { getEventListeners } from "node:events";
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startResponder, type Responder, type ResponderOptions } from "../../../bench/lib/snmp-responder.js";
import type { Snapshot } from "../../../src/pdu/model.js";
import { SnmpDriver } from "../../../src/pdu/snmp/driver.js";
import { snmpInstance } from "../../../testkit/snmpsim.js";

const OUTLETS = 24;

async function unit(
  extra: Partial<ResponderOptions> = {},
): Promise<{ responder: Responder; driver: SnmpDriver; requests: () => number }> {
  let requests = 0;
  const responder = await startResponder({
    profile: "apc-rpdu2",
    outlets: OUTLETS,
    units: 1,
    seed: 7,
    community: "walk",
    onRequest: () => requests++,
    ...extra,
  });
  const driver = new SnmpDriver(
    snmpInstance("walk-test", responder.ports[0]!, { Profile: "apc-rpdu2", Community: "walk" }, 2),
  );
  return { responder, driver, requests: () => requests };
}

/**
 * A UDP relay to the agent at `port` (loopback): passes the first `passes` requests and their
 * answers, drops every later request; `seen` counts the requests that reached it.
 */
async function relay(port: number, passes: number): Promise<{ port: number; seen(): number; close(): void }> {
  const front = createSocket("udp4");
  const back = createSocket("udp4");
  let seen = 0;
  let client: { address: string; port: number } | null = null;
  front.on("message", (msg, from) => {
    seen++;
    client = { address: from.address, port: from.port };
    if (seen <= passes) back.send(msg, port, "127.0.0.1");
  });
  back.on("message", (msg) => {
    if (client !== null) front.send(msg, client.port, client.address);
  });
  await new Promise<void>((resolve) => front.bind(0, "127.0.0.1", resolve));
  await new Promise<void>((resolve) => back.bind(0, "127.0.0.1", resolve));
  return {
    port: front.address().port,
    seen: () => seen,
    close: () => {
      front.close();
      back.close();
    },
  };
}

async function until(what: string, test: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !test(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(test(), `timed out waiting for ${what}`);
}

function outletNames(s: Snapshot): string[] {
  return s.devices.flatMap((d) => d.outlets.map((o) => `${o.index}:${o.name}:${o.state}`));
}

describe("the SNMP walk", () => {
  const opened: { responder: Responder; driver: SnmpDriver }[] = [];
  after(async () => {
    for (const o of opened) {
      await o.driver.close();
      await o.responder.close();
    }
  });

  it("walks the tables together, fitting the repetitions to the rows of the previous poll", async () => {
    const u = await unit();
    opened.push(u);
    const first = await u.driver.poll();
    assert.equal(outletNames(first).length, OUTLETS);
    const firstRequests = u.requests();
    const second = await u.driver.poll();
    const secondRequests = u.requests() - firstRequests;
    assert.deepEqual(outletNames(second), outletNames(first));
    // 20 outlet columns of 24 rows (24 repetitions at most), the banks' 4 columns of 2 rows and 22
    // columns of one row, 128 varbinds a request: four requests of outlet rows, then one with the
    // outlet columns' ends (a varbind each, as non-repeaters) beside the short columns. The
    // outlets' properties tables (their banks) are static: walked by the first poll only.
    assert.ok(secondRequests <= 5, `a poll took ${secondRequests} requests`);
    assert.ok(
      secondRequests < firstRequests,
      `${secondRequests} requests, ${firstRequests} on the first poll`,
    );
  });

  it("continues a column where an answer cut short ended", async () => {
    const whole = await unit();
    const cut = await unit({ maxAnswerVarbinds: 7 });
    opened.push(whole, cut);
    const a = await whole.driver.poll();
    const b = await cut.driver.poll();
    assert.deepEqual(outletNames(b), outletNames(a));
    assert.equal(b.warnings, undefined);
    assert.deepEqual(
      b.devices[0]?.entities.map((e) => e.key),
      a.devices[0]?.entities.map((e) => e.key),
    );
  });

  it("asks for less after a tooBig answer, and reads every outlet", async () => {
    const whole = await unit();
    const small = await unit({ tooBigAbove: 40 });
    opened.push(whole, small);
    const a = await whole.driver.poll();
    const b = await small.driver.poll();
    assert.deepEqual(outletNames(b), outletNames(a));
    const again = await small.driver.poll();
    assert.deepEqual(outletNames(again), outletNames(a));
  });

  it("ends a walk at once when the caller aborts, at its first request or a later one", async () => {
    const u = await unit();
    opened.push(u);
    for (const passes of [0, 2]) {
      const r = await relay(u.responder.ports[0]!, passes);
      // Timeout 2 s: an abort that did not end the request would fail the poll with a timeout.
      const driver = new SnmpDriver(
        snmpInstance(`abort-${passes}`, r.port, { Profile: "apc-rpdu2", Community: "walk" }, 2),
      );
      try {
        const stop = new AbortController();
        const reason = new Error(`stopped after ${passes} answers`);
        const polled = driver.poll(stop.signal);
        await until(`request ${passes + 1}`, () => r.seen() > passes);
        stop.abort(reason);
        await assert.rejects(polled, (e) => e === reason);
        assert.equal(r.seen(), passes + 1, "no request after the abort");
      } finally {
        await driver.close();
        r.close();
      }
    }
  });

  it("polls more units at once on one signal than EventTarget's 10 listeners without a warning", async () => {
    const u = await unit();
    opened.push(u);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const drivers = Array.from(
      { length: 16 },
      (_, i) =>
        new SnmpDriver(
          snmpInstance(`many-${i}`, u.responder.ports[0]!, { Profile: "apc-rpdu2", Community: "walk" }, 2),
        ),
    );
    try {
      const signal = new AbortController().signal;
      const polled = await Promise.all(drivers.map((d) => d.poll(signal)));
      assert.ok(polled.every((s) => outletNames(s).length === OUTLETS));
      assert.equal(getEventListeners(signal, "abort").length, 0);
      // A warning is emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(
        warnings.filter((w) => w.startsWith("MaxListenersExceededWarning")),
        [],
      );
    } finally {
      process.off("warning", onWarning);
      for (const d of drivers) await d.close();
    }
  });

  it("leaves no listener on the caller's signal after its polls", async () => {
    const u = await unit();
    opened.push(u);
    const signal = new AbortController().signal;
    for (let i = 0; i < 3; i++) assert.equal(outletNames(await u.driver.poll(signal)).length, OUTLETS);
    assert.equal(getEventListeners(signal, "abort").length, 0);
  });
});
