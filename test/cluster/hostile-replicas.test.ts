/**
 * Hostile input between replicas (docs/reliability.md, "Hostile input, round four"): three replicas
 * as real processes on a real etcd member with TLS and authentication, and a client on the pod network
 * sending what a replica never would to the replicas' own routes: no or malformed signature headers,
 * signatures under other secrets or for other bodies, paths, receivers or users, times outside the
 * window, replays of a captured valid forward (to the same replica and to the others), bodies that
 * are no message, oversized bodies; and reads of instances held elsewhere with the client's API key.
 * Counted per class, all asserted 0: replicas crashed, writes to an outlet nobody asked for, a
 * command executed more than once, the API key or the secret in any answer or log line.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { FORWARD_PATH, READ_PATH } from "../../src/cluster/forward/protocol.js";
import { REPLICA_HEADERS, signRequest } from "../../src/cluster/forward/signing.js";
import { FLEET_ETCD_PASSWORD, FLEET_SECRET, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 3;
const KEY = "hostile-replicas-key-8d21f6a0";
const NAMES = ["h1", "h2", "h3"];

interface Tally {
  tried: number;
  crashed: number;
  wrongOutlet: number;
  doubleActuation: number;
  leaked: number;
}

describe("hostile input to the replicas' own routes", { timeout: 300_000 }, () => {
  let fleet: ReplicaFleet;
  const tallies = new Map<string, Tally>();
  const tally = (name: string) => {
    let t = tallies.get(name);
    if (t === undefined) {
      t = { tried: 0, crashed: 0, wrongOutlet: 0, doubleActuation: 0, leaked: 0 };
      tallies.set(name, t);
    }
    return t;
  };
  const deviceOf = (id: string) => fleet.sims.get(id)!.deviceIds()[0]!;
  const leaks = (text: string) =>
    [KEY, FLEET_SECRET, FLEET_ETCD_PASSWORD].some((secret) => text.includes(secret)) ? 1 : 0;
  const send = async (base: string, path: string, body: string, headers: Record<string, string>) => {
    const response = await fetch(new URL(path, base), {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    return { status: response.status, text: `${JSON.stringify([...response.headers])}${text}` };
  };

  before(async () => {
    // One etcd member (the test is of the replicas' routes, not of the engine), with TLS and auth.
    fleet = await ReplicaFleet.start({
      instances: 6,
      buckets: BUCKETS,
      apiKey: KEY,
      etcdSecure: true,
      etcdMembers: 1,
    });
    await Promise.all(NAMES.map((n) => fleet.add(n)));
    await fleet.balanced(NAMES, 120_000);
  });
  after(async () => {
    const lines = [...tallies].map(([name, t]) => `${name}: ${JSON.stringify(t)}`);
    process.stdout.write(`# hostile replicas tally\n# ${lines.join("\n# ")}\n`);
    await fleet?.close();
  });

  it("forged, malformed, late, misaddressed and replayed forwards run nothing but the one valid forward, once", async () => {
    const { holders } = await fleet.balanced(NAMES, 120_000);
    const id = [...fleet.sims.keys()][0]!;
    const holder = holders.get(bucketOf(id, BUCKETS))!;
    const others = NAMES.filter((n) => n !== holder);
    await waitFor(
      async () => {
        const r = await fetch(
          `${fleet.get(holder).api!}/api/v1/instances/${id}/outlets/${deviceOf(id)}/0/control`,
          {
            method: "POST",
            headers: { "content-type": "application/json", "x-api-key": KEY },
            body: JSON.stringify({ action: "on" }),
          },
        );
        return r.status === 200;
      },
      `${holder} answers for ${id}`,
      30_000,
    );
    const identities = await fleet.identities();
    const to = identities.get(holder)!;
    const message = (action: string, commandId: string) =>
      JSON.stringify({
        kind: "command",
        instanceId: id,
        target: { kind: "outlet", deviceId: deviceOf(id), index: 1 },
        action,
        source: { surface: "rest", client: "10.0.0.66", key: true },
        commandId,
      });
    const parts = (body: string, over: Record<string, string> = {}) => ({
      method: "POST",
      path: FORWARD_PATH,
      body,
      from: others[0]!,
      to,
      user: "api-key",
      ...over,
    });
    const since = Date.now();
    const base = fleet.get(holder).api!;
    const classes: [string, () => { body: string; headers: Record<string, string> }][] = [
      ["no signature", () => ({ body: message("off", "h-a"), headers: {} })],
      [
        "random signature",
        () => {
          const body = message("off", "h-b");
          const headers = signRequest(FLEET_SECRET, parts(body));
          return {
            body,
            headers: { ...headers, [REPLICA_HEADERS.signature]: randomBytes(32).toString("hex") },
          };
        },
      ],
      [
        "another secret",
        () => {
          const body = message("off", "h-c");
          return { body, headers: signRequest(randomBytes(24).toString("hex"), parts(body)) };
        },
      ],
      [
        "the API key as secret",
        () => {
          const body = message("off", "h-d");
          return { body, headers: { ...signRequest(KEY, parts(body)), "x-api-key": KEY } };
        },
      ],
      [
        "malformed headers",
        () => {
          const body = message("off", "h-e");
          const headers = signRequest(FLEET_SECRET, parts(body));
          const field = Object.values(REPLICA_HEADERS)[Math.floor(Math.random() * 6)]!;
          const junk = [
            "",
            "x".repeat(4000),
            "../../etc",
            "1e400",
            "-1",
            "\u00e9t\u00e9",
            "r1/zz",
            "api key",
          ][Math.floor(Math.random() * 8)]!;
          return { body, headers: { ...headers, [field]: junk } };
        },
      ],
      [
        "signed for another body",
        () => {
          const body = message("off", "h-f");
          return { body: message("on", "h-f"), headers: signRequest(FLEET_SECRET, parts(body)) };
        },
      ],
      [
        "signed for another path",
        () => {
          const body = message("off", "h-g");
          return { body, headers: signRequest(FLEET_SECRET, parts(body, { path: READ_PATH })) };
        },
      ],
      [
        "signed for another replica or a previous run",
        () => {
          const body = message("off", "h-h");
          const receivers = [
            identities.get(others[0]!)!,
            identities.get(others[1]!)!,
            `${holder}/000000000000`,
          ];
          const receiver = receivers[Math.floor(Math.random() * receivers.length)]!;
          return { body, headers: signRequest(FLEET_SECRET, parts(body, { to: receiver })) };
        },
      ],
      [
        "outside the time window",
        () => {
          const body = message("off", "h-i");
          const shift = (31 + Math.floor(Math.random() * 3600)) * 1000 * (Math.random() < 0.5 ? -1 : 1);
          return { body, headers: signRequest(FLEET_SECRET, parts(body), Date.now() + shift) };
        },
      ],
      [
        "claiming a user the message does not name",
        () => {
          const body = message("off", "h-j");
          return {
            body,
            headers: signRequest(
              FLEET_SECRET,
              parts(body, { user: `console:${randomBytes(32).toString("hex")}` }),
            ),
          };
        },
      ],
      [
        "signed garbage bodies",
        () => {
          const bodies = [
            "",
            "null",
            "[]",
            "{",
            '{"kind":"command"}',
            JSON.stringify({ kind: "x".repeat(5000) }),
          ];
          const body = bodies[Math.floor(Math.random() * bodies.length)]!;
          return { body, headers: signRequest(FLEET_SECRET, parts(body)) };
        },
      ],
      [
        "oversized bodies",
        () => {
          const body = JSON.stringify({ pad: "x".repeat(20_000) });
          return { body, headers: signRequest(FLEET_SECRET, parts(body)) };
        },
      ],
    ];
    const PER_CLASS = 40;
    for (const [name, make] of classes) {
      const t = tally(`forward: ${name}`);
      for (let k = 0; k < PER_CLASS; k++) {
        const { body, headers } = make();
        const answer = await send(base, FORWARD_PATH, body, headers);
        t.tried++;
        t.leaked += leaks(answer.text);
        // A signed garbage body is refused after the signature (400, signed); everything else 401/413.
        // Refused: 401 (signature), 400 (signed but not a message), 413/431 (too large); an oversized
        // body cut while the API worker passes it on is 503 from the worker. Never carried out.
        assert.ok(
          [400, 401, 413, 431, 503].includes(answer.status),
          `${name}: ${answer.status} ${answer.text}`,
        );
        assert.ok(!answer.text.includes('"outcome"'), `${name}: carried out: ${answer.text}`);
      }
    }
    // One valid forward, then replays of it: to the holder, and to the others.
    const valid = message("off", "h-valid");
    const headers = signRequest(FLEET_SECRET, parts(valid));
    const first = await send(base, FORWARD_PATH, valid, headers);
    assert.equal(first.status, 200, first.text);
    const replays = tally("forward: replays of a captured valid forward");
    for (let k = 0; k < PER_CLASS; k++) {
      const target = [holder, ...others][k % 3]!;
      const answer = await send(fleet.get(target).api!, FORWARD_PATH, valid, headers);
      replays.tried++;
      replays.leaked += leaks(answer.text);
      if (answer.status !== 401) replays.doubleActuation++;
    }
    await sleep(1000);
    const writes = fleet.journal().filter((e) => e.time >= since);
    const all = tally("forward: every class, as written to the PDUs");
    all.tried = 1;
    const asked = writes.filter((e) => e.instance === id && e.member === holder && e.data.action === "off");
    all.wrongOutlet = writes.length - asked.length;
    all.doubleActuation = Math.max(0, asked.length - 1);
    assert.deepEqual(
      writes.map((e) => [e.member, e.instance, e.data.action]),
      [[holder, id, "off"]],
      "only the valid forward wrote, once",
    );
  });

  it("reads of instances held elsewhere carry no client credentials; hostile reads answer nothing", async () => {
    const { holders } = await fleet.balanced(NAMES, 120_000);
    const t = tally("read: the client's API key through another replica");
    const hostile = tally("read: forged or replayed reads");
    for (const id of fleet.sims.keys()) {
      const holder = holders.get(bucketOf(id, BUCKETS))!;
      for (const via of NAMES.filter((n) => n !== holder)) {
        const response = await fetch(`${fleet.get(via).api!}/api/v1/readings?instance=${id}`, {
          headers: { "x-api-key": KEY },
        });
        const text = await response.text();
        t.tried++;
        t.leaked += leaks(text);
        assert.ok([200, 503].includes(response.status), text);
      }
      const to = (await fleet.identities()).get(holder)!;
      const body = JSON.stringify({ instanceId: id });
      const parts = { method: "POST", path: READ_PATH, body, from: NAMES[0]!, to, user: "-" };
      const captured = signRequest(FLEET_SECRET, parts);
      const base = fleet.get(holder).api!;
      const first = await send(base, READ_PATH, body, captured);
      assert.ok([200, 503].includes(first.status), first.text);
      for (const headers of [
        captured,
        signRequest("not-the-secret-0123456789abcdef0123", parts),
        signRequest(FLEET_SECRET, parts, Date.now() - 120_000),
        {},
      ]) {
        const answer = await send(base, READ_PATH, body, headers);
        hostile.tried++;
        hostile.leaked += leaks(answer.text);
        assert.equal(answer.status, 401);
      }
    }
  });

  it("no replica crashed, and no log line holds the API key or a secret", () => {
    for (const name of NAMES) {
      const replica = fleet.get(name);
      const t = tally("all classes: replicas");
      t.tried++;
      if (replica.process.child.exitCode !== null || replica.process.child.signalCode !== null) t.crashed++;
      for (const line of replica.process.logs()) t.leaked += leaks(JSON.stringify(line));
    }
    for (const [name, t] of tallies) {
      assert.deepEqual(
        {
          crashed: t.crashed,
          wrongOutlet: t.wrongOutlet,
          doubleActuation: t.doubleActuation,
          leaked: t.leaked,
        },
        { crashed: 0, wrongOutlet: 0, doubleActuation: 0, leaked: 0 },
        name,
      );
    }
    const refusals = NAMES.flatMap((n) =>
      fleet
        .get(n)
        .process.logs()
        .filter((l) => /refused a request without a valid replica signature/.test(String(l.msg))),
    );
    const tried = [...tallies.values()].reduce((sum, t) => sum + t.tried, 0);
    assert.ok(refusals.length < tried / 10, `${tried} hostile requests, ${refusals.length} log lines`);
  });
});
