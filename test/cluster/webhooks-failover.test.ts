/**
 * Webhooks among three replicas on a real etcd (docs/events.md, "Among several replicas"): each
 * event is sent by the holder of its instance's bucket; a holder killed with events it has not
 * delivered (its receiver answering 500) leaves them in the bucket's record, and the new holder
 * sends them under the same ids; the alarms the new holder's poll raises again, and the instances
 * it sees available again, are not told twice. A receiver that dedupes by id sees each event
 * once: no raise, clear or availability reaches it under two ids.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { bucketOf } from "../../src/cluster/assign.js";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { MAX_RECORD_PAYLOAD_LENGTH } from "../../src/cluster/store.js";
import { engineBackend } from "../../src/webhooks/backends.js";
import { ReplicaFleet } from "../../testkit/replica-fleet.js";
import { waitFor } from "../../testkit/wait.js";
import { WebhookReceiver, type Delivery } from "../../testkit/webhook-receiver.js";

const BUCKETS = 4;
const INSTANCES = 4;
const SECRET = "whsec-fleet-7e2a9c4b1d";

describe("webhooks through a kill -9 of a holder among three replicas", { timeout: 240_000 }, () => {
  let fleet: ReplicaFleet;
  let receiver: WebhookReceiver;
  let records: EtcdLeaseStore;

  before(async () => {
    receiver = await WebhookReceiver.start(SECRET);
    fleet = await ReplicaFleet.start({
      instances: INSTANCES,
      buckets: BUCKETS,
      env: { SERVICE_WEBHOOK_0_SECRET: SECRET },
      extraConfig: () =>
        [
          "Webhooks:",
          `  - { Url: ${JSON.stringify(receiver.url)}, AllowHttp: true, Events: [alarm, availability], Timeout: 2, RetryMaxDelay: 0.2 }`,
        ].join("\n"),
    });
    records = new EtcdLeaseStore({
      endpoints: fleet.etcd.endpoints,
      prefix: `${fleet.prefix}~records/`,
      ca: fleet.etcd.ca,
      maxPayload: MAX_RECORD_PAYLOAD_LENGTH,
    });
    await Promise.all(["r1", "r2", "r3"].map((n) => fleet.add(n)));
    await fleet.balanced(["r1", "r2", "r3"]);
  });
  after(async () => {
    await records?.close();
    await fleet?.close();
    await receiver?.close();
  });

  /** The event types and ids of a bucket's record as its holder last wrote it. */
  const recorded = async (bucket: number) => {
    const backend = engineBackend(
      {
        description: "test",
        read: async (b) =>
          (await records.get(`webhooks-${b}`, AbortSignal.timeout(5000)))?.record?.payload ?? null,
        write: () => Promise.reject(new Error("read only")),
      },
      MAX_RECORD_PAYLOAD_LENGTH,
    );
    return (await backend.load(bucket))?.events ?? [];
  };
  const of = (type: string, instance: string) => (d: Delivery) =>
    d.json.type === type && d.json.instance === instance;
  /** Each kind of event (type, instance, alarm) with the ids it arrived under. */
  const idsByEvent = () => {
    const map = new Map<string, Set<string>>();
    for (const d of receiver.deliveries) {
      const alarm = (d.json.alarm as { id?: string } | undefined)?.id ?? "";
      const key = `${d.json.type} ${d.json.instance} ${alarm}`;
      map.set(key, (map.get(key) ?? new Set()).add(d.id));
    }
    return map;
  };

  it("delivers every event, none under two ids", async () => {
    const ids = [...fleet.sims.keys()];
    await waitFor(
      () => ids.every((id) => receiver.deliveries.some(of("instance.available", id))),
      "every instance available at the receiver",
      60_000,
    );
    receiver.mode = "error";
    const holders = await fleet.holders();
    const victim = holders.get(bucketOf(ids[0]!, BUCKETS))!;
    const theirs = ids.filter((id) => holders.get(bucketOf(id, BUCKETS)) === victim);
    for (const [, sim] of fleet.sims)
      sim.setAlarm(sim.deviceIds()[0]!, 0, { state: "alarm", severity: "warning" });
    // The victim's raises are in its buckets' records, undelivered, before it dies.
    await waitFor(
      async () => {
        for (const id of theirs) {
          const events = await recorded(bucketOf(id, BUCKETS));
          if (!events.some((e) => e.instance === id && e.body.includes('"alarm.raised"'))) return false;
        }
        return true;
      },
      `the raises of ${theirs.join(", ")} in their buckets' records`,
      30_000,
    );
    const owed = (await Promise.all(theirs.map((id) => recorded(bucketOf(id, BUCKETS))))).flat();
    await fleet.get(victim).process.kill();
    receiver.mode = "ok";
    const alive = ["r1", "r2", "r3"].filter((n) => n !== victim);
    await fleet.balanced(alive, 60_000);

    await waitFor(
      () => ids.every((id) => receiver.deliveries.some(of("alarm.raised", id))),
      "every instance's raise delivered",
      60_000,
    );
    // What the victim owed arrived under the ids it had.
    for (const e of owed)
      await waitFor(
        () => receiver.deliveries.some((d) => d.id === e.id),
        `the victim's event ${e.id}`,
        30_000,
      );

    for (const [, sim] of fleet.sims) sim.setAlarm(sim.deviceIds()[0]!, 0, null);
    await waitFor(
      () => ids.every((id) => receiver.deliveries.some(of("alarm.cleared", id))),
      "every instance's clear delivered",
      60_000,
    );
    // Let any late repeat arrive before judging.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    for (const [event, seen] of idsByEvent())
      assert.equal(seen.size, 1, `${event} arrived under ${[...seen].join(", ")}`);
    assert.ok(
      receiver.deliveries.every((d) => d.valid),
      "every signature valid",
    );
  });
});
