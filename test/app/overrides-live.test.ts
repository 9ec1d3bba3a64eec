/**
 * Overrides apply live with the Kubernetes source: the real ConfigMap watch (against
 * testkit/kube-api.ts) hands a change of `Overrides` and `Measurements` to App.applyLive of a real
 * composed App (simulator, embedded broker, REST). A renamed outlet's label topic and Home
 * Assistant device follow, a newly hidden outlet's retained topics and discovery configs are
 * cleared while REST marks it hidden, a newly protected outlet refuses `off` at once with nothing
 * sent, and undoing the change brings everything back; no restart is asked for.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { loadKubernetesConfig, type ConfigWatch } from "../../src/config/kubernetes/source.js";
import type { Simulator } from "../../src/simulator/index.js";
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "../../testkit/app-harness.js";
import { KubeApiStandIn } from "../../testkit/kube-api.js";
import { waitFor, type Recorder } from "../../testkit/mqtt-client.js";

const NS = "pdu";
const NAME = "pdu-bridge";
const KEY = "overrides-live-key-0b7d21";
const SECRETS = { SERVICE_API_KEY: KEY, SERVICE_PDU_USERNAME: "admin", SERVICE_PDU_PASSWORD: "admin" };

describe("overrides changed live through the Kubernetes source", () => {
  let h: AppHarness<"main">;
  let kube: KubeApiStandIn;
  let watch: ConfigWatch | null = null;
  let ha: Recorder;
  let dev: string;
  let sim: Simulator;
  const restarts: string[] = [];
  const errors: Error[] = [];

  /** The configuration; `changed` renames outlet 0, hides outlet 1, protects outlet 2, keeps realPower only. */
  const configYaml = (changed: boolean): string => {
    const outlets = changed
      ? [
          '          "0": { Name: beta }',
          '          "1": { Hidden: true }',
          '          "2": { Protected: true }',
        ]
      : ['          "0": { Name: alpha }'];
    return appYaml({
      api: { key: "" },
      pdus: [
        pduYaml("lab", sim, { actionsEnabled: true, pollInterval: 1, credentials: null }) +
          [
            "",
            ...(changed ? ["    Measurements: [realPower]"] : []),
            "    Overrides:",
            "      Outlets:",
            `        ${JSON.stringify(dev)}:`,
            ...outlets,
          ].join("\n"),
      ],
    });
  };

  before(async () => {
    kube = await KubeApiStandIn.start(NS);
    h = await startAppHarness<"main">({
      sims: { main: { outlets: 3 } },
      env: SECRETS,
      yaml: (s) => {
        sim = s.main;
        dev = s.main.deviceIds()[0]!;
        return configYaml(false);
      },
    });
    ha = await h.subscribe(["homeassistant/#"]);
    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml(false) });
    const env = {
      ...kube.env,
      ...SECRETS,
      SERVICE_CONFIG_SOURCE: "kubernetes",
      SERVICE_CONFIG_CONFIGMAP: NAME,
    };
    const source = await loadKubernetesConfig(env, { backoffMs: { initial: 20, max: 100 } });
    watch = source.watch({
      onChange: (next, live) => h.app.applyLive(next, live),
      onRestartRequired: (reason) => restarts.push(reason),
      onError: (error) => errors.push(error),
    });
    await kube.waitForWatches(1);
    await h.waitForPoll("lab");
  });

  after(async () => {
    await watch?.stop();
    await h?.close();
    await kube?.close();
  });

  const outletTopic = (index: number, rest: string) => `${h.parent}/lab/${dev}/outlets/${index}/${rest}`;
  /** Discovery config topics whose latest payload is non-empty and mentions `text`. */
  const configsWith = (text: string): string[] =>
    [...ha.latest("homeassistant/")]
      .filter(([, m]) => m.payload !== "" && m.payload.includes(text))
      .map(([topic]) => topic);
  const applied = async (count: number) =>
    waitFor(
      () => h.logs().filter((l) => l.msg === "configuration change applied").length >= count,
      "the change applied",
    );
  const hiddenRows = async (index: number) => {
    const r = await h.api.get("/api/v1/readings?instance=lab");
    const rows = r.json<{ outletIndex: number | null; type: string; hidden?: boolean }[]>();
    return rows.filter((row) => row.outletIndex === index);
  };
  const control = (index: number, action: string) =>
    h.api.post(`/api/v1/instances/lab/outlets/${dev}/${index}/control`, { action }, { "x-api-key": KEY });

  it("renames, hides and protects at once, and undoes it, without a restart", async () => {
    await h.mqtt.waitFor(outletTopic(0, "label"), (m) => m.payload === "alpha");
    const outlet1 = `/lab/${dev}/outlets/1/`;
    await waitFor(() => configsWith(outlet1).length > 0, "discovery configs of outlet 1");
    const outlet1Configs = configsWith(outlet1);

    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml(true) });
    await applied(1);
    const line = h.logs().find((l) => l.msg === "configuration change applied");
    assert.deepEqual(line?.overrides, ["lab"]);

    // Protected takes effect for the very next command: nothing reaches the PDU.
    const writes = h.sims.main.writes().length;
    const refused = await control(2, "off");
    assert.equal(refused.status, 409, refused.text);
    assert.equal(h.sims.main.writes().length, writes);
    assert.equal(h.sims.main.outlet(dev, 2).state, "on");

    // Renamed: the label topic and the outlet's Home Assistant device.
    await h.mqtt.waitFor(outletTopic(0, "label"), (m) => m.payload === "beta");
    // (named after its PDU, then the override's Name)
    await waitFor(
      () => configsWith(` beta"`).some((t) => t.includes("/pdu-bridge_lab/")),
      "the outlet device renamed beta",
    );
    // Hidden: its retained topics and every discovery config it had are cleared.
    await h.mqtt.waitFor(outletTopic(1, "label"), (m) => m.payload === "");
    await waitFor(
      () => outlet1Configs.every((t) => ha.last(t)?.payload === ""),
      "outlet 1's discovery configs cleared",
    );
    const rows = await hiddenRows(1);
    assert.ok(rows.length > 0 && rows.every((r) => r.hidden === true), JSON.stringify(rows));
    // Measurements: only realPower left in REST, and no new apparentPower sensor configs.
    assert.deepEqual([...new Set((await hiddenRows(0)).map((r) => r.type))], ["realPower"]);
    await waitFor(
      () => configsWith(`/lab/${dev}/outlets/0/measurements/apparentPower`).length === 0,
      "the apparentPower sensor's config cleared",
    );

    // Undo: outlet 1 comes back in discovery, outlet 2 switches again.
    kube.setConfigMap(NS, NAME, { "config.yaml": configYaml(false) });
    await applied(2);
    await waitFor(
      () => outlet1Configs.every((t) => (ha.last(t)?.payload ?? "") !== ""),
      "outlet 1's configs published again",
    );
    await waitFor(() => h.mqtt.last(outletTopic(0, "label"))?.payload === "alpha", "the label alpha again");
    const off = await control(2, "off");
    assert.equal(off.status, 200, off.text);
    assert.ok((await hiddenRows(1)).every((r) => !("hidden" in r)));

    assert.deepEqual(restarts, []);
    assert.deepEqual(errors, []);
  });
});
