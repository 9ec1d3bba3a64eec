/**
 * Keeps the Kubernetes side honest without an API server: the recorded answers of a real one
 * (testkit/fixtures/kubernetes-leases/exchanges.json, in the API reference's shapes) are
 *
 * 1. served to the real client (`KubernetesLeaseStore` over `@kubernetes/client-node`), which must
 *    send exactly the recorded requests and read every answer as the seam says (404 → null,
 *    409 → conflict, watch events, 401 → an error naming the token);
 * 2. compared with what the Lease API stand-in (testkit/kube-lease-api.ts) answers to the same
 *    requests: same status codes, same Status reasons and messages, same object shapes.
 */
import assert from "node:assert/strict";
import { readFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Agent, request } from "undici";
import { KubernetesLeaseStore } from "../../src/cluster/kubernetes.js";
import {
  LeaseConflictError,
  LeaseStoreError,
  type LeaseEvent,
  type LeaseRecord,
} from "../../src/cluster/store.js";
import { selfSignedCertificate } from "../../src/simulator/cert.js";
import { EtcdCluster } from "../../testkit/etcd.js";
import { KubeLeaseApi } from "../../testkit/kube-lease-api.js";
import { REPO_ROOT } from "../../testkit/repo.js";
import { waitFor } from "../../testkit/wait.js";

type Json = Record<string, unknown>;

interface Step {
  readonly name: string;
  readonly request: { method: string; path: string; query?: string; body?: Json; token?: string };
  readonly response: { status: number; body?: Json; events?: { type: string; object: Json }[] };
}

const steps: Step[] = (
  JSON.parse(
    await readFile(join(REPO_ROOT, "testkit/fixtures/kubernetes-leases/exchanges.json"), "utf8"),
  ) as { steps: Step[] }
).steps;
const step = (name: string) => steps.find((s) => s.name === name)!;
const signal = () => AbortSignal.timeout(10_000);

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const sortedQuery = (q: string) => [...new URLSearchParams(q).entries()].sort().map(([k, v]) => `${k}=${v}`);

/** The record the recorded create and update carry, as the seam writes it. */
function recordOf(body: Json): LeaseRecord {
  const spec = body.spec as Json;
  const metadata = body.metadata as Json;
  const time = (t: unknown) => new Date(String(t).replace(/(\.\d{3})\d{3}Z$/, "$1Z")).toISOString();
  return {
    holder: spec.holderIdentity as string,
    durationSeconds: spec.leaseDurationSeconds as number,
    acquireTime: time(spec.acquireTime),
    renewTime: time(spec.renewTime),
    transitions: spec.leaseTransitions as number,
    payload: (metadata.annotations as Record<string, string>)["pdu-bridge/payload"]!,
  };
}

describe("the real client against the recorded answers", () => {
  let server: Server;
  let saDir: string;
  const received: { step: string; method: string; path: string; query: string; body: unknown }[] = [];
  const errors: string[] = [];
  let next = 0;

  before(async () => {
    const { key, cert } = await selfSignedCertificate();
    saDir = await mkdtemp(join(tmpdir(), "pdu-bridge-replay-sa-"));
    await Promise.all([
      writeFile(join(saDir, "token"), "replay-token"),
      writeFile(join(saDir, "ca.crt"), cert),
    ]);
    server = createServer({ key, cert }, (req: IncomingMessage, res: ServerResponse) => {
      let text = "";
      req.on("data", (c: Buffer) => (text += c.toString("utf8")));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "https://127.0.0.1");
        const expected = steps[next++];
        if (expected === undefined) {
          errors.push(`unexpected request ${req.method} ${url.pathname}`);
          res.writeHead(500).end();
          return;
        }
        received.push({
          step: expected.name,
          method: req.method ?? "",
          path: url.pathname,
          query: url.search.slice(1),
          body: text === "" ? undefined : JSON.parse(text),
        });
        const tokenOk = req.headers.authorization === "Bearer replay-token";
        if (tokenOk !== (expected.request.token === undefined))
          errors.push(`${expected.name}: token ${String(tokenOk)}`);
        if (expected.response.events !== undefined) {
          res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
          for (const event of expected.response.events) res.write(`${JSON.stringify(event)}\n`);
          return; // the stream stays open, as a watch does
        }
        res.writeHead(expected.response.status, { "content-type": "application/json" });
        res.end(JSON.stringify(expected.response.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(saDir, { recursive: true, force: true });
  });

  it("sends the recorded requests and reads every answer as the seam says", async () => {
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const store = new KubernetesLeaseStore({
      server: url,
      serviceAccountDir: saDir,
      namespace: "pdu",
      leasePrefix: "pdu-bridge",
    });
    const created = recordOf(step("create").request.body!);
    const updated = recordOf(step("update").request.body!);
    try {
      assert.equal(await store.get("bucket-0", signal()), null);
      const lease = await store.create("bucket-0", created, signal());
      assert.equal(lease.version, "481516");
      await assert.rejects(store.create("bucket-0", created, signal()), LeaseConflictError);
      const read = await store.get("bucket-0", signal());
      assert.equal(read?.version, "481516");
      assert.equal(read?.record?.holder, "pdu-bridge-7d9f8-abcde/0f3a9c2e1b4d");
      assert.equal(read?.record?.transitions, 1);
      assert.equal(read?.record?.durationSeconds, 15);
      assert.equal(read?.record?.payload, '{"once":[]}');
      const list = await store.list(signal());
      assert.equal(list.revision, "481520");
      assert.deepEqual(
        list.leases.map((l) => [l.name, l.version]),
        [["bucket-0", "481516"]],
      );
      const events: LeaseEvent[] = [];
      const watch = store.watch(
        list.revision,
        (e) => events.push(e),
        () => undefined,
      );
      await waitFor(() => events.length === 2, "the recorded watch events");
      assert.deepEqual(
        events.map((e) => (e.type === "put" ? ["put", e.lease.name, e.lease.version] : ["delete", e.name])),
        [
          ["put", "bucket-0", "481523"],
          ["delete", "bucket-0"],
        ],
      );
      watch.close();
      assert.equal((await store.update("bucket-0", updated, "481516", signal())).version, "481523");
      await assert.rejects(store.update("bucket-0", updated, "481516", signal()), LeaseConflictError);
      await assert.rejects(store.delete("bucket-0", "481516", signal()), LeaseConflictError);
      await store.delete("bucket-0", "481523", signal());
      await assert.rejects(store.update("bucket-0", updated, "481523", signal()), LeaseConflictError);
    } finally {
      await store.close();
    }

    const wrongDir = await mkdtemp(join(tmpdir(), "pdu-bridge-replay-wrong-"));
    await writeFile(join(wrongDir, "token"), "wrong");
    await writeFile(join(wrongDir, "ca.crt"), (await selfSignedCertificate()).cert);
    const denied = new KubernetesLeaseStore({
      server: url,
      serviceAccountDir: wrongDir,
      namespace: "pdu",
      leasePrefix: "pdu-bridge",
    });
    try {
      await assert.rejects(denied.get("bucket-0", signal()), (e: unknown) => {
        assert.ok(e instanceof LeaseStoreError);
        assert.match(e.message, /HTTP 401, unauthorized: the service-account token was refused/);
        return true;
      });
    } finally {
      await denied.close();
      await rm(wrongDir, { recursive: true, force: true });
    }

    assert.deepEqual(errors, []);
    for (const got of received) {
      const expected = step(got.step).request;
      assert.equal(got.method, expected.method, got.step);
      assert.equal(got.path, expected.path, got.step);
      assert.deepEqual(sortedQuery(got.query), sortedQuery(expected.query ?? ""), got.step);
      if (expected.body !== undefined)
        assert.deepEqual(got.body, expected.body, `${got.step}: the request body`);
    }
    assert.equal(received.length, steps.length - 1, "every recorded request but the malformed one was made");
  });
});

describe("the Lease API stand-in against the recorded answers", () => {
  let etcd: EtcdCluster;
  let api: KubeLeaseApi;
  let agent: Agent;
  before(async () => {
    etcd = await EtcdCluster.start({ members: 1 });
    api = await KubeLeaseApi.start({ etcd: etcd.endpoints });
    agent = new Agent({ connect: { ca: (await selfSignedCertificate()).cert } });
  });
  after(async () => {
    await agent?.close();
    await api?.close();
    await etcd?.close();
  });

  async function send(
    s: Step,
    body: Json | undefined,
    query = s.request.query,
  ): Promise<{ status: number; body: Json }> {
    const response = await request(`${api.url}${s.request.path}${query === undefined ? "" : `?${query}`}`, {
      method: s.request.method as "GET",
      headers: {
        authorization: `Bearer ${s.request.token ?? api.token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? null : JSON.stringify(body),
      dispatcher: agent,
    });
    return { status: response.statusCode, body: (await response.body.json()) as Json };
  }

  /** Keys and value types, recursively; managedFields' field sets are opaque. */
  function shape(value: unknown, key = ""): unknown {
    if (key === "fieldsV1") return "object";
    if (Array.isArray(value)) return value.length === 0 ? [] : [shape(value[0])];
    if (isObject(value))
      return Object.fromEntries(
        Object.keys(value)
          .sort()
          .map((k) => [k, shape(value[k], k)]),
      );
    return typeof value;
  }

  function assertLike(name: string, got: { status: number; body: Json }, recorded: Step["response"]): void {
    assert.equal(got.status, recorded.status, `${name}: status (${JSON.stringify(got.body)})`);
    const want = recorded.body!;
    assert.deepEqual(shape(got.body), shape(want), `${name}: shape`);
    for (const k of ["kind", "apiVersion", "status", "reason", "code"])
      assert.equal(got.body[k], want[k], `${name}: ${k}`);
    if (isObject(want.details))
      assert.deepEqual({ ...(got.body.details as Json), uid: 0 }, { ...want.details, uid: 0 });
    if (typeof want.message === "string") {
      const norm = (m: unknown) => String(m).replace(/\d+/g, "N");
      if (recorded.status === 400)
        assert.ok(
          String(got.body.message).startsWith(
            'Lease in version "v1" cannot be handled as a Lease: parsing time',
          ),
        );
      else assert.equal(norm(got.body.message), norm(want.message), `${name}: message`);
    }
    if (want.kind === "Lease") {
      assert.deepEqual(got.body.spec, want.spec, `${name}: spec`);
      const [g, w] = [got.body.metadata as Json, want.metadata as Json];
      assert.deepEqual(
        [g.name, g.namespace, g.labels, g.annotations],
        [w.name, w.namespace, w.labels, w.annotations],
      );
    }
  }

  const withVersion = (body: Json, version: string): Json => ({
    ...body,
    metadata: { ...(body.metadata as Json), resourceVersion: version },
  });
  const versionOf = (body: Json) => (body.metadata as Json).resourceVersion as string;

  it("answers the recorded requests with the recorded statuses, reasons and shapes", async () => {
    const run = async (name: string, body?: Json, query?: string) => {
      const s = step(name);
      const got = await send(s, body ?? s.request.body, query);
      assertLike(name, got, s.response);
      return got;
    };
    await run("get-absent");
    const created = await run("create");
    await run("create-exists");
    await run("get");
    const list = await run("list");
    const items = list.body.items as Json[];
    assert.equal(items.length, 1);
    assert.deepEqual(shape(items[0]), shape((step("list").response.body!.items as Json[])[0]));

    // The watch from the list's resourceVersion, open while the lease is updated and deleted.
    const watchStep = step("watch");
    const query = new URLSearchParams(watchStep.request.query);
    query.set("resourceVersion", versionOf(list.body));
    const events: { type: string; object: Json }[] = [];
    const stream = await request(`${api.url}${watchStep.request.path}?${query.toString()}`, {
      headers: { authorization: `Bearer ${api.token}` },
      dispatcher: agent,
    });
    assert.equal(stream.statusCode, 200);
    const reading = (async () => {
      let buffer = "";
      for await (const chunk of stream.body as AsyncIterable<Buffer>) {
        buffer += chunk.toString("utf8");
        let end: number;
        while ((end = buffer.indexOf("\n")) >= 0) {
          events.push(JSON.parse(buffer.slice(0, end)) as { type: string; object: Json });
          buffer = buffer.slice(end + 1);
        }
        if (events.length >= 2) break;
      }
    })();

    const createdVersion = versionOf(created.body);
    const updated = await run("update", withVersion(step("update").request.body!, createdVersion));
    const updatedVersion = versionOf(updated.body);
    await run("update-stale", withVersion(step("update-stale").request.body!, createdVersion));
    await run("delete-stale", { preconditions: { resourceVersion: createdVersion } });
    await run("delete", { preconditions: { resourceVersion: updatedVersion } });
    await run("update-gone", withVersion(step("update-gone").request.body!, updatedVersion));
    await run("unauthorized");
    await run("create-millisecond-time");

    await reading;
    assert.deepEqual(
      events.map((e) => e.type),
      watchStep.response.events!.map((e) => e.type),
    );
    for (const [i, event] of events.entries()) {
      const recorded = watchStep.response.events![i]!;
      assert.deepEqual(shape(event.object), shape(recorded.object), `watch event ${i}: shape`);
      assert.deepEqual(event.object.spec, recorded.object.spec);
    }
    assert.equal(
      versionOf(events[0]!.object),
      updatedVersion,
      "MODIFIED carries the update's resourceVersion",
    );
  });
});
