/**
 * What a replica logs at info when it takes its buckets, on a real etcd: one line for the buckets a
 * round acquired (how many, which), not one per bucket; each bucket's line is at debug. Leaving is
 * one line too.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { EtcdLeaseStore } from "../../src/cluster/etcd.js";
import { createClusterWithStore } from "../../src/cluster/index.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { LogCapture } from "../../testkit/log-capture.js";
import { waitFor } from "../../testkit/wait.js";

const INFO = "info";
const DEBUG = "debug";
const BUCKETS = 64;

let etcd: EtcdCluster;
before(async () => {
  etcd = await EtcdCluster.start({ members: 1 });
});
after(async () => {
  await etcd?.close();
});

it("64 buckets taken at start: one info line naming them, each bucket at debug", async () => {
  const capture = new LogCapture();
  const cluster = createClusterWithStore(
    new EtcdLeaseStore({
      endpoints: etcd.endpoints,
      prefix: `/acquired-${randomUUID()}/`,
      attemptTimeoutMs: 400,
    }),
    {
      MemberName: "replica-a",
      Buckets: BUCKETS,
      LeaseDurationSeconds: 3,
      RenewDeadlineSeconds: 2,
      RetryPeriodSeconds: 0.5,
    },
    { logger: capture.logger, ready: true },
  );
  try {
    await cluster.start();
    await waitFor(() => cluster.status().buckets.length === BUCKETS, "every bucket held", 15_000);
    const lines = capture.lines.filter((l) => /bucket/.test(String(l.msg)));
    const info = lines.filter((l) => l.level === INFO);
    assert.deepEqual(
      info.map((l) => l.msg),
      [`cluster: ${BUCKETS} buckets acquired`],
      "one info line for the round that took them",
    );
    assert.deepEqual(
      info[0]?.buckets,
      Array.from({ length: BUCKETS }, (_, i) => i),
    );
    assert.equal(info[0]?.held, BUCKETS);
    const perBucket = lines.filter((l) => l.msg === "cluster: bucket acquired");
    assert.equal(perBucket.length, BUCKETS);
    assert.ok(perBucket.every((l) => l.level === DEBUG));
  } finally {
    await cluster.stop();
  }
  const leaving = capture.lines.filter((l) => l.level !== DEBUG && /bucket/.test(String(l.msg)));
  assert.deepEqual(
    leaving.map((l) => l.msg),
    [`cluster: ${BUCKETS} buckets acquired`, "cluster: left, buckets released"],
    "leaving is one line at info",
  );
});
