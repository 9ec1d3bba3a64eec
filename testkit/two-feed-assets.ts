/**
 * The whole service on mosquitto with two Geist simulators, `a1` on feed A and `b1` on feed B (both
 * outlets of each on, polled every second), and two assets with a cord on each: `db` (outlet 0 of
 * both) and `web` (outlet 1 of both). The asset topic tests share it.
 */
import { appYaml, pduYaml, startAppHarness, type AppHarness } from "./app-harness.js";
import { yamlFragment } from "./config-yaml.js";
import { Mosquitto } from "./mosquitto.js";
import { Recorder } from "./mqtt-client.js";
import { waitFor } from "./wait.js";

export type TwoFeedSims = "a1" | "b1";

export const TWO_FEED_ASSETS = {
  db: {
    Cords: [
      { Instance: "a1", Outlet: 0 },
      { Instance: "b1", Outlet: 0 },
    ],
  },
  web: {
    Cords: [
      { Instance: "a1", Outlet: 1 },
      { Instance: "b1", Outlet: 1 },
    ],
  },
};

export interface TwoFeedAssets {
  readonly mosquitto: Mosquitto;
  readonly h: AppHarness<TwoFeedSims>;
  close(): Promise<void>;
}

/** `frozen`: the simulators' readings move only when the test moves them; else at every read. */
export async function startTwoFeedAssets(options: {
  frozen: boolean;
  seeds: readonly [number, number];
}): Promise<TwoFeedAssets> {
  const mosquitto = await Mosquitto.start();
  const [seedA, seedB] = options.seeds;
  const frozen = options.frozen ? { frozen: true } : {};
  const h = await startAppHarness<TwoFeedSims>({
    sims: { a1: { outlets: 2, seed: seedA, ...frozen }, b1: { outlets: 2, seed: seedB, ...frozen } },
    beforeStart: (s) => {
      for (const sim of [s.a1, s.b1])
        for (let i = 0; i < 2; i++) sim.setOutletState(sim.deviceIds()[0]!, i, "on");
    },
    yaml: (s) =>
      appYaml({
        broker: { host: mosquitto.host, port: mosquitto.port },
        pdus: [
          pduYaml("a1", s.a1, { pollInterval: 1, more: { Feed: "A" } }),
          pduYaml("b1", s.b1, { pollInterval: 1, more: { Feed: "B" } }),
        ],
        api: { key: "" },
        extra: [
          yamlFragment({ Feeds: { A: {}, B: {} } }, 0),
          yamlFragment({ Assets: TWO_FEED_ASSETS }, 0),
        ].join("\n"),
      }),
    waitForFirstPolls: true,
  });
  return {
    mosquitto,
    h,
    close: async () => {
      await h.close();
      await mosquitto.close();
    },
  };
}

/**
 * After mosquitto restarted without its retained messages: a fresh subscriber to every asset topic
 * that holds each of `topics` as retained. One that came before the bridge reconnected heard them
 * live, not retained: another is asked for until one does. The caller closes it.
 */
export async function retainedAgain(rig: TwoFeedAssets, topics: readonly string[]): Promise<Recorder> {
  return waitFor(
    async () => {
      const r = await Recorder.connect(rig.mosquitto, [`${rig.h.parent}/$assets/+/+`]).catch(() => null);
      if (r === null) return null;
      const complete = await waitFor(
        () => topics.every((t) => r.last(t)?.retain === true),
        "every asset topic retained",
        3_000,
      ).catch(() => false);
      if (complete) return r;
      await r.close();
      return null;
    },
    "the asset topics retained again after the restart",
    30_000,
  );
}
