import assert from "node:assert/strict";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it, type TestContext } from "node:test";
import { ConfigError } from "../../../src/config/errors.js";
import {
  configSource,
  diffConfig,
  loadKubernetesConfig,
  type ConfigWatchHandlers,
  type KubernetesSourceOptions,
  type LiveChanges,
} from "../../../src/config/kubernetes/source.js";
import { LIVE_APPLIERS, liveKeys } from "../../../src/config/kubernetes/diff.js";
import { parseConfigText } from "../../../src/config/load.js";
import { referenceRows } from "../../../src/config/reference.js";
import type { Config } from "../../../src/config/schema.js";
import type { Logger } from "../../../src/log.js";
import { KubeApiStandIn } from "../../../testkit/kube-api.js";
import { LogCapture } from "../../../testkit/log-capture.js";
import { freePort } from "../../../testkit/repo.js";
import { waitFor } from "../../../testkit/wait.js";

const NS = "pdu";
const NAME = "pdu-bridge";

interface Variant {
  parentTopic?: string;
  rackA?: number;
  level?: string;
  apiKey?: string;
  extra?: string;
}

/** A small valid configuration; each field of `v` changes one key. */
function configYaml(v: Variant = {}): string {
  return [
    "Mqtt:",
    "  Connection: { Host: broker.test }",
    `  ParentTopic: ${v.parentTopic ?? "racks"}`,
    "Pdus:",
    "  rack-a:",
    "    Connection: { Host: 127.0.0.1, Port: 9 }",
    `    PollInterval: ${v.rackA ?? 5}`,
    "  rack-b:",
    "    Connection: { Host: 127.0.0.1, Port: 10 }",
    "    PollInterval: 10",
    ...(v.extra === undefined ? [] : [v.extra]),
    ...(v.apiKey === undefined ? [] : ["Api:", `  ApiKey: ${v.apiKey}`]),
    `Logging: { Level: ${v.level ?? "info"} }`,
    "",
  ].join("\n");
}

const parse = (text: string): Promise<Config> => parseConfigText(text, "test.yaml", {});

/** Records what the watch reports and lets a test wait for it. */
function recorder() {
  const changes: { next: Config; live: LiveChanges }[] = [];
  const restarts: string[] = [];
  const errors: Error[] = [];
  const handlers: ConfigWatchHandlers = {
    onChange: (next, live) => changes.push({ next, live }),
    onRestartRequired: (reason) => restarts.push(reason),
    onError: (error) => errors.push(error),
  };
  return { changes, restarts, errors, handlers };
}

describe("diffConfig", () => {
  it("finds nothing between equal configurations", async () => {
    const diff = diffConfig(await parse(configYaml()), await parse(configYaml()));
    assert.deepEqual(diff.changed, []);
    assert.deepEqual(diff.restart, []);
    assert.equal(diff.live.pollIntervals.size, 0);
    assert.equal(diff.live.logLevel, undefined);
  });

  it("applies PollInterval and Logging.Level live", async () => {
    const diff = diffConfig(await parse(configYaml()), await parse(configYaml({ rackA: 2, level: "debug" })));
    assert.deepEqual(diff.changed, ["Logging.Level", "Pdus.rack-a.PollInterval"]);
    assert.deepEqual(diff.restart, []);
    assert.deepEqual([...diff.live.pollIntervals], [["rack-a", 2]]);
    assert.equal(diff.live.logLevel, "debug");
  });

  it("applies Overrides and Measurements live, naming the instance", async () => {
    const extra = (o: string) => ({ extra: `  rack-c:\n    Connection: { Host: 127.0.0.1 }\n${o}` });
    const before = await parse(configYaml(extra("")));
    const after = await parse(
      configYaml(
        extra(
          '    Measurements: [energy]\n    Overrides:\n      Outlets:\n        D1:\n          "0": { Name: x, Protected: true }',
        ),
      ),
    );
    const diff = diffConfig(before, after);
    assert.deepEqual(diff.restart, []);
    assert.deepEqual([...diff.changed].sort(), [
      "Pdus.rack-c.Measurements",
      "Pdus.rack-c.Overrides.Outlets.D1",
    ]);
    assert.deepEqual([...diff.live.overrides], ["rack-c"]);
    // A change inside one override is a change of Overrides too.
    const renamed = await parse(
      configYaml(
        extra(
          '    Measurements: [energy]\n    Overrides:\n      Outlets:\n        D1:\n          "0": { Name: y, Protected: true }',
        ),
      ),
    );
    assert.deepEqual([...diffConfig(after, renamed).live.overrides], ["rack-c"]);
    assert.deepEqual(diffConfig(after, renamed).restart, []);
  });

  it("needs a restart for any other key, and names only those keys", async () => {
    const diff = diffConfig(
      await parse(configYaml()),
      await parse(configYaml({ rackA: 3, parentTopic: "other" })),
    );
    assert.deepEqual(diff.restart, ["Mqtt.ParentTopic"]);
    assert.deepEqual(diff.changed, ["Mqtt.ParentTopic", "Pdus.rack-a.PollInterval"]);
  });

  it("names an added instance, and a reordering as Pdus", async () => {
    const added = configYaml({ extra: "  rack-c:\n    Connection: { Host: 127.0.0.1 }" });
    assert.deepEqual(diffConfig(await parse(configYaml()), await parse(added)).restart, ["Pdus.rack-c"]);
    assert.deepEqual(diffConfig(await parse(added), await parse(configYaml())).restart, ["Pdus.rack-c"]);

    const swapped = configYaml()
      .replace("rack-a", "rack-x")
      .replace("rack-b", "rack-a")
      .replace("rack-x", "rack-b");
    const diff = diffConfig(await parse(configYaml()), await parse(swapped));
    assert.ok(diff.restart.includes("Pdus"), diff.restart.join());
  });
});

describe("live keys", () => {
  it("are the keys the schema marks appliesLive, and each has a way to apply", () => {
    assert.deepEqual(liveKeys().sort(), [
      "Assets",
      "Feeds",
      "Logging.Level",
      "Pdus.<id>.DeviceFeeds",
      "Pdus.<id>.Feed",
      "Pdus.<id>.Measurements",
      "Pdus.<id>.OutletCircuits",
      "Pdus.<id>.Overrides",
      "Pdus.<id>.PollInterval",
      "Sequences",
    ]);
    assert.deepEqual(Object.keys(LIVE_APPLIERS).sort(), liveKeys().sort());
  });

  it("are flagged in the generated reference", () => {
    const level = referenceRows().find((r) => r.key === "Logging.Level");
    assert.match(level?.description ?? "", /applies without a restart/);
    const topic = referenceRows().find((r) => r.key === "Mqtt.ParentTopic");
    assert.doesNotMatch(topic?.description ?? "", /applies without a restart/);
  });
});

describe("configSource", () => {
  it("is file unless SERVICE_CONFIG_SOURCE says kubernetes, and refuses anything else", () => {
    assert.equal(configSource({}), "file");
    assert.equal(configSource({ SERVICE_CONFIG_SOURCE: "file" }), "file");
    assert.equal(configSource({ SERVICE_CONFIG_SOURCE: "kubernetes" }), "kubernetes");
    assert.throws(
      () => configSource({ SERVICE_CONFIG_SOURCE: "k8s" }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.key, "SERVICE_CONFIG_SOURCE");
        return true;
      },
    );
  });
});

describe("loadKubernetesConfig against a stand-in API server", () => {
  let api: KubeApiStandIn;
  const options: KubernetesSourceOptions = { backoffMs: { initial: 20, max: 100 } };
  let env: Record<string, string>;

  before(async () => {
    api = await KubeApiStandIn.start(NS);
    env = { ...api.env, SERVICE_CONFIG_SOURCE: "kubernetes", SERVICE_CONFIG_CONFIGMAP: NAME };
  });
  after(() => api.close());

  /** Puts `text` in the ConfigMap, loads it and starts a watch stopped after the test. */
  async function loadAndWatch(t: TestContext, logger?: Logger) {
    api.answerAll(null);
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml() });
    const source = await loadKubernetesConfig(env, options);
    const seen = recorder();
    const watch = source.watch(seen.handlers, logger);
    t.after(() => watch.stop());
    await api.waitForWatches(1);
    return { source, watch, ...seen };
  }

  it("reads config.yaml of the ConfigMap with the service-account token, namespace from the SA dir", async (t) => {
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 7 }) });
    const before = api.requests.length;
    const source = await loadKubernetesConfig(env, options);
    assert.deepEqual(
      source.config.instances.map((i) => [i.id, i.PollInterval]),
      [
        ["rack-a", 7],
        ["rack-b", 10],
      ],
    );
    assert.equal(source.config.origin, `configmap ${NS}/${NAME}`);
    assert.equal(source.configMap, `${NS}/${NAME}`);
    const get = api.requests[before];
    assert.equal(get?.path, `/api/v1/namespaces/${NS}/configmaps/${NAME}`);
    assert.equal(get?.authorization, "Bearer token-1");
    t.after(() => api.setConfigMap(NS, NAME, { "config.yaml": configYaml() }));
  });

  it("uses SERVICE_CONFIG_NAMESPACE over the service account's namespace", async () => {
    api.setConfigMap("other", NAME, { "config.yaml": configYaml({ parentTopic: "elsewhere" }) });
    const source = await loadKubernetesConfig({ ...env, SERVICE_CONFIG_NAMESPACE: "other" }, options);
    assert.equal(source.config.Mqtt.ParentTopic, "elsewhere");
    assert.equal(source.configMap, `other/${NAME}`);
  });

  it("watches from the ConfigMap's resourceVersion and hands a PollInterval change over live", async (t) => {
    const { source, changes, restarts, errors } = await loadAndWatch(t);
    const watchRequest = api.requests.findLast((r) => r.query.get("watch") === "true");
    assert.equal(watchRequest?.path, `/api/v1/namespaces/${NS}/configmaps`);
    assert.equal(watchRequest?.query.get("fieldSelector"), `metadata.name=${NAME}`);
    assert.ok(Number(watchRequest?.query.get("resourceVersion")) > 0);
    assert.equal(watchRequest?.authorization, `Bearer ${api.token}`);

    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 2 }) });
    await waitFor(() => changes.length === 1, "onChange");
    const [change] = changes;
    assert.deepEqual([...change!.live.pollIntervals], [["rack-a", 2]]);
    assert.equal(change!.next.instances[0]?.PollInterval, 2);
    assert.equal(source.config.instances[0]?.PollInterval, 5, "the start configuration is not mutated");

    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 2, level: "warn" }) });
    await waitFor(() => changes.length === 2, "second onChange");
    assert.equal(changes[1]!.live.logLevel, "warn");
    assert.equal(
      changes[1]!.live.pollIntervals.size,
      0,
      "compared with the applied configuration, not the first",
    );
    assert.deepEqual(restarts, []);
    assert.deepEqual(errors, []);
  });

  it("asks for a restart naming the key when Mqtt.ParentTopic changes, and stops watching", async (t) => {
    const capture = new LogCapture();
    const { changes, restarts } = await loadAndWatch(t, capture.logger);
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ parentTopic: "moved" }) });
    await waitFor(() => restarts.length === 1, "onRestartRequired");
    assert.match(restarts[0]!, /Mqtt\.ParentTopic/);
    assert.ok(
      capture.lines.some((l) => l.msg === "configuration changed (Mqtt.ParentTopic): restarting"),
      capture.text(),
    );
    assert.deepEqual(changes, []);
    await api.waitForWatches(0);
  });

  it("refuses an Api.ApiKey in the ConfigMap at start with a ConfigError", async () => {
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ apiKey: "hunter2" }) });
    await assert.rejects(loadKubernetesConfig(env, options), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.key, "Api.ApiKey");
      assert.match(e.message, /secrets do not belong in ConfigMaps; set SERVICE_API_KEY/);
      assert.match(e.message, /configmap pdu\/pdu-bridge/);
      assert.doesNotMatch(e.message, /hunter2/);
      return true;
    });
  });

  it("reports an Api.ApiKey arriving through the watch and keeps the old configuration", async (t) => {
    const { changes, restarts, errors } = await loadAndWatch(t);
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ apiKey: "hunter2", parentTopic: "moved" }) });
    await waitFor(() => errors.length === 1, "onError");
    assert.ok(errors[0] instanceof ConfigError);
    assert.match(errors[0].message, /Api\.ApiKey: secrets do not belong in ConfigMaps/);
    // Still on the old configuration: a later valid change is compared with it, and still watched.
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 3 }) });
    await waitFor(() => changes.length === 1, "onChange");
    assert.deepEqual([...changes[0]!.live.pollIntervals], [["rack-a", 3]]);
    assert.deepEqual(restarts, []);
  });

  it("reports an invalid configuration or a missing config.yaml key through the watch", async (t) => {
    const { changes, errors } = await loadAndWatch(t);
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 0 }) });
    await waitFor(() => errors.length === 1, "onError");
    assert.match(errors[0]!.message, /Pdus\.rack-a\.PollInterval/);
    api.setConfigMap(NS, NAME, { "other.yaml": "x" });
    await waitFor(() => errors.length === 2, "second onError");
    assert.match(errors[1]!.message, /has no key config\.yaml/);
    assert.deepEqual(changes, []);
  });

  it("re-reads the token for each request and resumes the watch when the server ends it", async (t) => {
    const { changes } = await loadAndWatch(t);
    await api.rotateToken("token-2");
    t.after(() => api.rotateToken("token-1"));
    api.endWatches();
    await api.waitForWatches(1);
    assert.equal(api.requests.at(-1)?.authorization, "Bearer token-2");
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 4 }) });
    await waitFor(() => changes.length === 1, "onChange after reconnect");
    assert.equal(changes[0]!.live.pollIntervals.get("rack-a"), 4);
  });

  it("reads the ConfigMap afresh after 410 Gone and watches from its new resourceVersion", async (t) => {
    const { changes, errors } = await loadAndWatch(t);
    const before = api.requests.length;
    api.pushWatchError(NS, NAME, 410, "too old resource version");
    await api.waitForWatches(1);
    const after = api.requests.slice(before);
    assert.equal(after[0]?.path, `/api/v1/namespaces/${NS}/configmaps/${NAME}`, "a GET comes first");
    assert.equal(after[1]?.query.get("watch"), "true");
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 6 }) });
    await waitFor(() => changes.length === 1, "onChange");
    assert.deepEqual(errors, [], "410 is part of watching, not an error");
  });

  it("retries a failing watch with backoff and reports each failure", async (t) => {
    const { changes, errors } = await loadAndWatch(t);
    api.answerAll({ code: 500, message: "etcd is having a day" });
    api.endWatches();
    await waitFor(() => errors.length >= 2, "onError");
    assert.match(errors[0]!.message, /HTTP 500.*etcd is having a day/);
    api.answerAll(null);
    await api.waitForWatches(1);
    api.setConfigMap(NS, NAME, { "config.yaml": configYaml({ rackA: 8 }) });
    await waitFor(() => changes.length === 1, "onChange");
  });

  it("names SERVICE_CONFIG_CONFIGMAP when the ConfigMap does not exist (404)", async () => {
    await assert.rejects(
      loadKubernetesConfig({ ...env, SERVICE_CONFIG_CONFIGMAP: "missing" }, options),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.key, "SERVICE_CONFIG_CONFIGMAP");
        assert.match(
          e.message,
          /^config error: SERVICE_CONFIG_CONFIGMAP: cannot read configmap pdu\/missing/,
        );
        assert.match(e.message, /HTTP 404, not found/);
        return true;
      },
    );
  });

  it("explains 403 as missing RBAC and 401 as a refused token", async (t) => {
    t.after(() => api.answerAll(null));
    api.answerAll({ code: 403, message: 'configmaps "pdu-bridge" is forbidden' });
    await assert.rejects(
      loadKubernetesConfig(env, options),
      /SERVICE_CONFIG_CONFIGMAP: .*HTTP 403, forbidden.*Role/,
    );
    api.answerAll(null);

    const saDir = await mkdtemp(join(tmpdir(), "pdu-bridge-sa-wrong-"));
    t.after(() => rm(saDir, { recursive: true, force: true }));
    await cp(join(api.saDir, "ca.crt"), join(saDir, "ca.crt"));
    await writeFile(join(saDir, "token"), "not-the-token");
    await writeFile(join(saDir, "namespace"), NS);
    await assert.rejects(
      loadKubernetesConfig(env, { ...options, serviceAccountDir: saDir }),
      /SERVICE_CONFIG_CONFIGMAP: .*HTTP 401, unauthorized/,
    );
  });

  it("refuses a ConfigMap without config.yaml, a missing SERVICE_CONFIG_CONFIGMAP and an unreachable API", async () => {
    api.setConfigMap(NS, "no-key", { "settings.yaml": "x" });
    await assert.rejects(
      loadKubernetesConfig({ ...env, SERVICE_CONFIG_CONFIGMAP: "no-key" }, options),
      /SERVICE_CONFIG_CONFIGMAP: configmap pdu\/no-key has no key config\.yaml \(it has settings\.yaml\)/,
    );
    await assert.rejects(
      loadKubernetesConfig({ ...env, SERVICE_CONFIG_CONFIGMAP: "" }, options),
      /SERVICE_CONFIG_CONFIGMAP: must name/,
    );

    const port = await freePort();
    await assert.rejects(
      loadKubernetesConfig({ ...env, KUBERNETES_SERVICE_PORT: String(port) }, options),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.equal(e.key, "SERVICE_CONFIG_CONFIGMAP");
        assert.match(e.message, new RegExp(`https://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
        return true;
      },
    );
  });
});
