/**
 * The Kubernetes configuration source end to end, through the real CLI process as a pod runs it
 * (SERVICE_CONFIG_SOURCE=kubernetes, the service-account directory and KUBERNETES_SERVICE_HOST/PORT
 * pointing at testkit/kube-api.ts): a PollInterval change through the watch changes the cadence
 * the simulator sees; an Api.ApiKey in the ConfigMap is refused (at start: exit 2 naming the key;
 * through the watch: a warning, and the running configuration stays); an instance removed through the
 * watch loses its retained Home Assistant discovery configs before the restart, the others stay.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, describe, it } from "node:test";
import { startSimulator, type Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml } from "../../testkit/app-harness.js";
import { childEnv, CliProcess, hasStackTrace } from "../../testkit/cli-process.js";
import { KubeApiStandIn } from "../../testkit/kube-api.js";
import { Mosquitto } from "../../testkit/mosquitto.js";
import { Recorder, waitFor } from "../../testkit/mqtt-client.js";

const NS = "pdu";
const NAME = "pdu-bridge";
const CM_KEY = "api-key-written-into-the-configmap-9d7e";

describe("configuration from a Kubernetes ConfigMap, through the real CLI", () => {
  let sim: Simulator;
  let kube: KubeApiStandIn;
  const processes: CliProcess[] = [];

  before(async () => {
    sim = await startSimulator({ outlets: 2 });
    kube = await KubeApiStandIn.start(NS);
  });

  after(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    await kube?.close();
    await sim?.close();
  });

  const configYaml = (o: { pollInterval: number; apiKey?: string; parentTopic?: string }): string =>
    appYaml({
      pdus: [pduYaml("lab", sim, { pollInterval: o.pollInterval, credentials: null })],
      ...(o.parentTopic === undefined ? {} : { parentTopic: o.parentTopic }),
      ...(o.apiKey === undefined ? {} : { extra: `Api: { ApiKey: ${JSON.stringify(o.apiKey)} }` }),
    });

  const podEnv = (configMap: string) =>
    childEnv({ ...kube.env, SERVICE_CONFIG_SOURCE: "kubernetes", SERVICE_CONFIG_CONFIGMAP: configMap });

  /** GET /api requests (one per poll of a single unit) the simulator received so far. */
  const polls = (): number => sim.requests.filter((r) => r.method === "GET" && r.path === "/api").length;

  /** Polls seen during `ms`. */
  async function pollsDuring(ms: number): Promise<number> {
    const start = polls();
    await sleep(ms);
    return polls() - start;
  }

  /** Waits for `count` more polls; the deadline is far shorter than `count` slow intervals. */
  async function morePolls(count: number, deadlineMs: number, what: string): Promise<void> {
    const start = polls();
    await waitFor(() => polls() - start >= count, what, deadlineMs);
  }

  it("applies a PollInterval change live (new cadence at the simulator), refuses an Api.ApiKey, restarts for the rest", async () => {
    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml({ pollInterval: 10 }) });
    const cli = CliProcess.spawn([], podEnv(NAME));
    processes.push(cli);
    const { healthPort } = await cli.started();
    assert.ok(healthPort !== null);
    const started = cli.logs().find((l) => l.msg === "pdu-bridge started");
    assert.equal(started?.origin, `configmap ${NS}/${NAME}`);
    await kube.waitForWatches(1);
    await waitFor(() => polls() >= 1, "the first poll");

    // PollInterval 10: at most one more poll within 2 s.
    const slow = await pollsDuring(2000);
    assert.ok(slow <= 1, `at most 1 poll in 2 s at PollInterval 10, saw ${slow}`);

    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml({ pollInterval: 1 }) });
    const applied = await cli.waitForLog(
      (l) => l.msg === "configuration change applied",
      "the change applied",
    );
    assert.deepEqual(applied.pollIntervals, { lab: 1 });
    // At PollInterval 10 four polls would take 30 s or more; at 1 they take about 4 s.
    await morePolls(4, 12_000, "4 polls at the new PollInterval of 1 s");

    // An API key in the ConfigMap: refused with a warning; the service keeps running on what it has
    // (the same update also changes ParentTopic, which would otherwise make it restart).
    kube.setConfigMap(NS, NAME, {
      "config.yaml": configYaml({ pollInterval: 1, apiKey: CM_KEY, parentTopic: "elsewhere" }),
    });
    const warning = await cli.waitForLog(
      (l) => l.level === "warn" && l.msg === "configuration change not applied",
      "the warning",
    );
    assert.match(String(warning.error), /Api\.ApiKey/);
    assert.equal(cli.exit, null, "still running");
    assert.ok(!cli.output.includes(CM_KEY), "the key is not logged");
    await morePolls(2, 8000, "polls still at PollInterval 1");

    // The watch goes on: a later valid live change is applied against the kept configuration.
    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml({ pollInterval: 2 }) });
    await cli.waitForLog(
      (l) => l.msg === "configuration change applied" && (l.pollIntervals as { lab?: number }).lab === 2,
      "the second change applied",
    );

    // A change that cannot apply live stops the service cleanly (exit 0) for Kubernetes to restart it.
    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml({ pollInterval: 2, parentTopic: "elsewhere" }) });
    assert.deepEqual(await cli.waitForExit(8000), { code: 0, signal: null }, cli.output);
    assert.match(cli.stderr, /configuration changed, stopping/);
    assert.ok(!hasStackTrace(cli.output), cli.output);
  });

  it("check-config reads the ConfigMap in Kubernetes mode", async () => {
    kube.setConfigMap(NS, "checked", { "config.yaml": configYaml({ pollInterval: 7 }) });
    const good = CliProcess.spawn(["check-config"], podEnv("checked"));
    processes.push(good);
    assert.deepEqual(await good.waitForExit(), { code: 0, signal: null }, good.output);
    assert.match(good.stdout, /PollInterval: 7/);

    kube.setConfigMap(NS, "checked-key", { "config.yaml": configYaml({ pollInterval: 7, apiKey: CM_KEY }) });
    const bad = CliProcess.spawn(["check-config"], podEnv("checked-key"));
    processes.push(bad);
    assert.deepEqual(await bad.waitForExit(), { code: 2, signal: null }, bad.output);
    assert.match(bad.stderr, /Api\.ApiKey/);
    assert.ok(!bad.output.includes(CM_KEY), "the key is not printed");
  });

  it("an Api.ApiKey in the ConfigMap at start exits 2 naming the key", async () => {
    kube.setConfigMap(NS, "with-key", { "config.yaml": configYaml({ pollInterval: 5, apiKey: CM_KEY }) });
    const cli = CliProcess.spawn([], podEnv("with-key"));
    processes.push(cli);
    assert.deepEqual(await cli.waitForExit(), { code: 2, signal: null }, cli.output);
    assert.match(cli.stderr, /Api\.ApiKey/);
    assert.match(cli.stderr, /SERVICE_API_KEY/, "says where the key belongs");
    assert.ok(!cli.output.includes(CM_KEY), "the key is not printed");
    assert.ok(!hasStackTrace(cli.output), cli.output);
    assert.equal(cli.logs().length, 0, "nothing started");
  });

  it("an instance removed through the ConfigMap loses its retained discovery configs before the restart; the others stay", async () => {
    const broker = await Mosquitto.start();
    const recorders: Recorder[] = [];
    try {
      const yaml = (ids: readonly string[]) =>
        appYaml({
          broker,
          pdus: ids.map((id) => pduYaml(id, sim, { pollInterval: 1, credentials: null })),
        });
      /** The retained, non-empty discovery configs of an instance, as a fresh subscriber sees them. */
      const retainedOf = async (id: string): Promise<Set<string>> => {
        const r = await Recorder.connect(broker, [`homeassistant/+/pdu-bridge_${id}/+/config`, "marker"]);
        recorders.push(r);
        await r.publish("marker", "x", false);
        await r.waitFor("marker");
        return new Set(r.messages.filter((m) => m.retain && m.payload !== "").map((m) => m.topic));
      };
      kube.setConfigMap(NS, "removal", { "config.yaml": yaml(["lab", "gone"]) });
      const cli = CliProcess.spawn([], podEnv("removal"));
      processes.push(cli);
      await cli.started();
      await waitFor(
        async () => (await retainedOf("gone")).size > 20,
        "the discovery of the instance to remove",
      );
      await waitFor(async () => (await retainedOf("lab")).size > 20, "the discovery of the instance kept");
      const gone = await retainedOf("gone");
      const kept = await retainedOf("lab");
      const watcher = await Recorder.connect(broker, ["homeassistant/#"]);
      recorders.push(watcher);

      kube.setConfigMap(NS, "removal", { "config.yaml": yaml(["lab"]) });
      const line = await cli.waitForLog(
        (l) => l.msg === "cleared the retained discovery configs of an instance that is no longer configured",
        "the info line",
      );
      assert.equal(line.instance, "gone");
      assert.equal(line.cleared, gone.size, "each of its configs cleared once");
      assert.deepEqual(await cli.waitForExit(8000), { code: 0, signal: null }, cli.output);

      assert.deepEqual([...(await retainedOf("gone"))], [], "no config of the removed instance is retained");
      assert.deepEqual(
        [...(await retainedOf("lab"))].sort(),
        [...kept].sort(),
        "the kept instance's configs stay",
      );
      assert.deepEqual(
        watcher.messages
          .filter((m) => m.payload === "" && !m.topic.includes("pdu-bridge_gone/"))
          .map((m) => m.topic),
        [],
        "nothing else was cleared",
      );
    } finally {
      for (const r of recorders) await r.close();
      await broker.close();
    }
  });
});
