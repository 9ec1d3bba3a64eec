/**
 * REST control on any replica (docs/cluster.md, "REST on any replica"): three replicas as real
 * processes on a real 3-member etcd, mosquitto and simulators that journal every write with the
 * replica that sent it. A request sent to a replica that does not hold the instance is carried out
 * by the holder and answered as one process answers; a holder killed while reboots of its instances
 * are sent to the others runs every reboot answered 200 exactly once and never any other; a forward
 * without the installation's signature is refused.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { FORWARD_PATH, READ_PATH } from "../../src/cluster/forward/protocol.js";
import { REPLICA_HEADERS, signRequest } from "../../src/cluster/forward/signing.js";
import { FOLD_DEFAULTS } from "../../src/log-limit.js";
import { FLEET_SECRET, ReplicaFleet } from "../../testkit/replica-fleet.js";
import { sleep, waitFor } from "../../testkit/wait.js";

const BUCKETS = 6;
const KEY = "forward-test-key-7f3a9c2e";
const NAMES = ["r1", "r2", "r3"];

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: Record<string, unknown>;
}

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(new URL(path, base), {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: (text === "" ? {} : JSON.parse(text)) as Record<string, unknown>,
  } satisfies Answer;
}

describe("REST control sent to any replica is carried out by the holder", { timeout: 300_000 }, () => {
  let fleet: ReplicaFleet;
  const deviceOf = (id: string) => fleet.sims.get(id)!.deviceIds()[0]!;
  const control = (replica: string, id: string, index: number, action: string) =>
    post(
      fleet.get(replica).api!,
      `/api/v1/instances/${id}/outlets/${deviceOf(id)}/${index}/control`,
      { action },
      { "x-api-key": KEY },
    );

  /**
   * Bucket → holder, once every bucket is held by the named replicas, evenly, and the same on two
   * reads a second apart (the spread settled).
   */
  const settled = (names: readonly string[]) =>
    waitFor(
      async () => {
        const even = async () => {
          const holders = await fleet.holders();
          if (holders.size !== BUCKETS) return undefined;
          const counts = names.map((n) => [...holders.values()].filter((m) => m === n).length);
          return counts.every((c) => c === BUCKETS / names.length) ? holders : undefined;
        };
        const first = await even();
        if (first === undefined) return undefined;
        await sleep(1000);
        const second = await even();
        return second !== undefined && [...first].every(([b, m]) => second.get(b) === m) ? second : undefined;
      },
      `every bucket held by ${names.join(", ")}, evenly`,
      40_000,
    );
  const heldBy = (holders: Map<number, string>, member: string) =>
    [...fleet.sims.keys()].filter((id) => holders.get(bucketOf(id, BUCKETS)) === member);
  /** The replica holding the most instances, and the others. */
  const busiest = (holders: Map<number, string>) => {
    const [holder] = [...NAMES].sort((a, b) => heldBy(holders, b).length - heldBy(holders, a).length);
    return { holder: holder!, others: NAMES.filter((n) => n !== holder) as [string, string] };
  };

  before(async () => {
    fleet = await ReplicaFleet.start({ instances: 9, buckets: BUCKETS, apiKey: KEY });
    await Promise.all(NAMES.map((n) => fleet.add(n)));
  });
  after(async () => {
    await fleet?.close();
  });

  it("on, off and reboot sent to a non-holder: executed by the holder, answered 200 with one process's body, audited once by the holder", async () => {
    const holders = await settled(NAMES);
    const { holder, others } = busiest(holders);
    const [a, b] = others;
    const id = heldBy(holders, holder)[0]!;
    // The holder has polled it (control needs a snapshot).
    await waitFor(
      async () => (await control(holder, id, 0, "on")).status === 200,
      "the holder answers for its instance",
      20_000,
    );
    const since = Date.now();
    for (const [replica, action] of [
      [a, "off"],
      [b, "on"],
      [a, "reboot"],
    ] as const) {
      const answer = await control(replica, id, 0, action);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      // The body one process answers (docs/http.md): the same fields, nothing added.
      assert.deepEqual(answer.body, { ok: true, instanceId: id, deviceId: deviceOf(id), index: 0, action });
    }
    const writes = fleet.journal().filter((e) => e.instance === id && e.time >= since);
    assert.deepEqual(
      writes.map((e) => [e.member, e.data.action]),
      [
        [holder, "off"],
        [holder, "on"],
        [holder, "reboot"],
      ],
      "each executed once, by the holder",
    );
    // The audit line: written by the holder with the original client, none by the receiving replica.
    const audits = (name: string) =>
      fleet
        .get(name)
        .process.logs()
        .filter((l) => l.audit === "control" && l.instance === id && Date.parse(String(l.time)) >= since);
    await waitFor(() => audits(holder).length === 3, "the holder's three audit lines", 5000);
    assert.deepEqual(
      audits(holder).map((l) => [l.action, l.user, l.via, l.status]),
      [
        ["off", "api-key", a, 200],
        ["on", "api-key", b, 200],
        ["reboot", "api-key", a, 200],
      ],
    );
    assert.deepEqual(audits(a), []);
    assert.deepEqual(audits(b), []);
    // A refusal of the holder's core comes back as it is (problem+json, its status).
    const refused = await control(b, id, 99, "off");
    assert.equal(refused.status, 404, JSON.stringify(refused.body));
    const local = await control(holder, id, 99, "off");
    assert.deepEqual(refused.body, local.body);
    // A settings write sent to a non-holder: written by the holder, answered as one process answers.
    const settingsSince = Date.now();
    const patched = await fetch(`${fleet.get(a).api!}/api/v1/instances/${id}/outlets/${deviceOf(id)}/1`, {
      method: "PATCH",
      headers: { "content-type": "application/json", "x-api-key": KEY },
      body: JSON.stringify({ label: "web-01" }),
    });
    const patchedBody = (await patched.json()) as Record<string, unknown>;
    assert.equal(patched.status, 200, JSON.stringify(patchedBody));
    assert.deepEqual(patchedBody, {
      ok: true,
      instanceId: id,
      deviceId: deviceOf(id),
      index: 1,
      settings: { label: "web-01" },
    });
    assert.deepEqual(
      fleet
        .journal()
        .filter((e) => e.instance === id && e.time >= settingsSince)
        .map((e) => [e.member, e.cmd]),
      [[holder, "set"]],
    );
    // One instance's readings on any replica: the holder's (a replica that never polled it has none).
    const readings = async (replica: string) => {
      const response = await fetch(`${fleet.get(replica).api!}/api/v1/readings?instance=${id}`);
      const list = (await response.json()) as {
        instanceId: string;
        deviceId: string;
        source: string;
        type: string;
      }[];
      return {
        status: response.status,
        keys: list.map((r) => `${r.instanceId}/${r.deviceId}/${r.source}/${r.type}`),
      };
    };
    // The label changes the readings' keys at the holder's next poll; both reads come after it.
    await waitFor(
      async () => (await readings(holder)).keys.some((k) => k.startsWith(`${id}/${deviceOf(id)}/web-01/`)),
      "the holder's readings carry the new label",
      20_000,
    );
    const there = await readings(holder);
    assert.equal(there.status, 200);
    assert.ok(
      there.keys.length > 0 && there.keys.every((k) => k.startsWith(`${id}/`)),
      "the holder's readings",
    );
    for (const other of others)
      assert.deepEqual(await readings(other), there, `readings of ${id} on ${other}`);
  });

  it("a forward without a valid signature, replayed, late, for another replica or claiming another user is refused and runs nothing; a signed one is never forwarded again", async () => {
    const holders = await settled(NAMES);
    const { holder, others } = busiest(holders);
    const id = heldBy(holders, holder)[0]!;
    const identities = await fleet.identities();
    const message = {
      kind: "command",
      instanceId: id,
      target: { kind: "outlet", deviceId: deviceOf(id), index: 1 },
      action: "off",
      source: { surface: "rest", client: "127.0.0.1", key: true },
      commandId: "forward-test-1",
    };
    const body = JSON.stringify(message);
    const parts = (to: string, over: Partial<{ body: string; user: string; path: string }> = {}) => ({
      method: "POST",
      path: over.path ?? FORWARD_PATH,
      body: over.body ?? body,
      from: others[0],
      to,
      user: over.user ?? "api-key",
    });
    const toHolder = identities.get(holder)!;
    const since = Date.now();
    const r1 = fleet.get(holder).api!;
    const refused: [string, Record<string, string>, string?][] = [
      ["no signature", { [REPLICA_HEADERS.from]: others[0] }],
      [
        "another installation's secret",
        signRequest("another-installation-secret-0123456789", parts(toHolder)),
      ],
      [
        "the API key as signature",
        { ...signRequest(FLEET_SECRET, parts(toHolder)), [REPLICA_HEADERS.signature]: KEY, "x-api-key": KEY },
      ],
      ["signed for another body", signRequest(FLEET_SECRET, parts(toHolder)), body.replace('"off"', '"on"')],
      ["signed for another path", signRequest(FLEET_SECRET, parts(toHolder, { path: READ_PATH }))],
      ["signed a minute ago", signRequest(FLEET_SECRET, parts(toHolder), Date.now() - 60_000)],
      ["signed a minute ahead", signRequest(FLEET_SECRET, parts(toHolder), Date.now() + 60_000)],
      ["signed for the holder's previous run", signRequest(FLEET_SECRET, parts(`${holder}/0123456789ab`))],
      ["signed for another replica", signRequest(FLEET_SECRET, parts(identities.get(others[1])!))],
      [
        "claiming a console user the message does not name",
        signRequest(FLEET_SECRET, parts(toHolder, { user: `console:${"a".repeat(64)}` })),
      ],
    ];
    for (const [what, headers, sent] of refused) {
      const answer = await post(r1, FORWARD_PATH, sent ?? body, headers);
      assert.ok(
        [400, 401].includes(answer.status),
        `${what}: ${answer.status} ${JSON.stringify(answer.body)}`,
      );
    }
    // A valid one runs once; the same request again (replayed as captured) is refused.
    const valid = signRequest(FLEET_SECRET, parts(toHolder));
    const first = await post(r1, FORWARD_PATH, body, valid);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal((first.body.outcome as Record<string, unknown>).status, 200);
    const again = await post(r1, FORWARD_PATH, body, valid);
    assert.equal(again.status, 401, "replayed");
    // Captured, then replayed to another replica: refused there too (it names the holder).
    const elsewhereReplay = await post(fleet.get(others[1]).api!, FORWARD_PATH, body, valid);
    assert.equal(elsewhereReplay.status, 401);
    await sleep(500);
    assert.deepEqual(
      fleet
        .journal()
        .filter((e) => e.time >= since)
        .map((e) => [e.member, e.data.action]),
      [[holder, "off"]],
      "only the valid forward ran, once",
    );
    // The refusals are logged folded: far fewer lines than refusals, with the count.
    await waitFor(
      () =>
        fleet
          .get(holder)
          .process.logs()
          .some((l) => /refused a request without a valid replica signature/.test(String(l.msg))),
      "the refusal logged",
      5000,
    );
    const lines = fleet
      .get(holder)
      .process.logs()
      .filter((l) => /refused a request without a valid replica signature/.test(String(l.msg)));
    assert.ok(
      lines.length <= FOLD_DEFAULTS.burst + 1,
      `${refused.length + 2} refusals folded into ${lines.length} line(s)`,
    );
    // Signed for a replica that does not hold the instance: 503 not-held, not forwarded on.
    const r2 = fleet.get(others[0]).api!;
    const elsewhere = await post(
      r2,
      FORWARD_PATH,
      body,
      signRequest(FLEET_SECRET, parts(identities.get(others[0])!)),
    );
    assert.equal(elsewhere.status, 200);
    const outcome = elsewhere.body.outcome as Record<string, unknown>;
    assert.equal(outcome.status, 503);
    assert.equal(outcome.problem, "not-held");
    await sleep(500);
    assert.equal(fleet.journal().filter((e) => e.time >= since).length, 1, "nothing more written by anyone");
  });

  it("kill -9 of a holder while reboots of its instances go to the other replicas: each answered 200 ran exactly once, none twice, none by a replica not holding it", async () => {
    const holders = await settled(NAMES);
    const { holder: killed, others } = busiest(holders);
    const victims = heldBy(holders, killed);
    for (const id of victims) {
      await waitFor(
        async () => (await control(killed, id, 0, "on")).status === 200,
        `${killed} answers for ${id}`,
        20_000,
      );
    }
    // One sender per victim outlet, through r1 and r3 in turn, each waiting for its answer.
    const answers: { id: string; index: number; at: number; answer: Answer }[] = [];
    let stop = false;
    const sender = async (id: string, index: number) => {
      let k = 0;
      while (!stop) {
        const via = others[k++ % 2]!;
        const at = Date.now();
        const answer = await control(via, id, index, "reboot");
        answers.push({ id, index, at, answer });
        await sleep(400);
      }
    };
    const since = Date.now();
    const senders = victims.flatMap((id) => [sender(id, 0), sender(id, 1)]);
    await sleep(2500);
    await fleet.get(killed).process.kill();
    const killedAt = Date.now();
    await settled(others);
    // Until the new holders have polled and carried out reboots again.
    await waitFor(
      () => answers.some((a) => a.at > killedAt && a.answer.status === 200),
      "a reboot answered 200 after the takeover",
      30_000,
    );
    await sleep(2000);
    stop = true;
    await Promise.all(senders);
    await sleep(1000);

    const statuses = new Set(answers.map((a) => a.answer.status));
    for (const { answer } of answers) {
      const { status } = answer;
      assert.ok([200, 409, 502, 503].includes(status), JSON.stringify(answer));
      if (status === 503) assert.ok(answer.retryAfter !== null, "503 with Retry-After");
      if (status === 502) assert.match(String(answer.body.type), /outcome-unknown$/, JSON.stringify(answer));
    }
    assert.ok(statuses.has(200), "reboots done");
    assert.ok(
      answers.some((x) => x.at > killedAt && x.answer.status === 503),
      "requests in the gap answered 503",
    );
    const journal = fleet.journal().filter((e) => e.time >= since && e.data.action === "reboot");
    for (const id of victims) {
      for (const index of [0, 1]) {
        const mine = answers.filter((a) => a.id === id && a.index === index);
        const done = mine.filter((a) => a.answer.status === 200).length;
        const unknown = mine.filter((a) => a.answer.status === 502).length;
        const ran = journal.filter((e) => e.instance === id && e.path.includes(`/outlet/${index}`));
        // Every 200 ran once; a 502 outcome-unknown at most once; nothing else ran.
        assert.ok(
          ran.length >= done && ran.length <= done + unknown,
          `${id}/${index}: ${ran.length} executed, ${done} answered 200, ${unknown} outcome unknown`,
        );
      }
    }
    // Written only by holders: the killed one until it was killed, then those that took its buckets.
    assert.deepEqual(
      journal.filter((e) => e.member === killed && e.time > killedAt),
      [],
      "nothing by the killed replica",
    );
    const after = await fleet.holders();
    for (const e of journal.filter((x) => victims.includes(x.instance))) {
      const expected = e.time <= killedAt ? killed : after.get(bucketOf(e.instance, BUCKETS));
      assert.equal(e.member, expected, JSON.stringify(e));
    }
  });
});
