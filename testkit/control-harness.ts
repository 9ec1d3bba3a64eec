/**
 * The control core against the real simulator: a real Config (from YAML through the real loader),
 * real GeistClients, a real SnapshotStore filled by real polls, and a recorder for pollSoon.
 */
import { EventBus } from "../src/bus.js";
import { parseConfigText } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import { configYaml } from "./config-yaml.js";
import { createControlService } from "../src/control/service.js";
import type { ControlOutcome, ControlService, ControlTarget } from "../src/control/types.js";
import { silentLogger } from "../src/log.js";
import { GeistClient } from "../src/pdu/geist/client.js";
import { findOutlet, type Snapshot } from "../src/pdu/model.js";
import { SnapshotStore } from "../src/poller/store.js";
import { startSimulator, type Simulator, type SimulatorOptions } from "../src/simulator/index.js";

export interface TestInstance {
  readonly id: string;
  readonly actionsEnabled?: boolean;
  /** Seconds per PDU request, default 5. */
  readonly timeout?: number;
  /** Seconds, default 5. */
  readonly pollInterval?: number;
  /** Default admin / admin (the simulator's default user). */
  readonly username?: string;
  readonly password?: string;
  /** `RelayProtection` in seconds; default the service's. */
  readonly relayProtection?: number;
}

export interface ControlHarness {
  readonly sim: Simulator;
  readonly config: Config;
  readonly store: SnapshotStore;
  readonly clients: ReadonlyMap<string, GeistClient>;
  /** Every pollSoon call, in order. */
  readonly pollSoonCalls: { instanceId: string; delayMs: number | undefined }[];
  readonly service: ControlService;
  /** Poll one instance with its client and record the snapshot in the store. */
  poll(instanceId: string): Promise<Snapshot>;
  /** Shorthand for a REST-sourced request. */
  run(instanceId: string, target: ControlTarget, action: string): Promise<ControlOutcome>;
  /** The state of an outlet as the store reports it (latches applied). */
  storeState(instanceId: string, deviceId: string, index: number): string | undefined;
  close(): Promise<void>;
}

export async function configFor(sim: Simulator, instances: readonly TestInstance[]): Promise<Config> {
  const text = configYaml({
    Mqtt: { Embedded: { Bind: "127.0.0.1", Port: 0 } },
    Pdus: Object.fromEntries(
      instances.map((i) => [
        i.id,
        {
          Connection: { Host: sim.host, Port: sim.port, Scheme: sim.scheme, Timeout: i.timeout ?? 5 },
          Credentials: { Username: i.username ?? "admin", Password: i.password ?? "admin" },
          PollInterval: i.pollInterval ?? 5,
          ActionsEnabled: i.actionsEnabled ?? true,
          ...(i.relayProtection === undefined ? {} : { RelayProtection: i.relayProtection }),
        },
      ]),
    ),
    Api: { Port: 0 },
    Health: { Enabled: false, Port: 0 },
  });
  return parseConfigText(text, "control-test.yaml", {});
}

export interface ControlHarnessOptions {
  readonly sim: SimulatorOptions;
  readonly instances: readonly TestInstance[];
  /** Instances polled once before the harness is returned (default: none). */
  readonly poll?: readonly string[];
  readonly signal?: AbortSignal;
}

export async function startControlHarness(options: ControlHarnessOptions): Promise<ControlHarness> {
  const sim = await startSimulator(options.sim);
  const clients = new Map<string, GeistClient>();
  let store: SnapshotStore | undefined;
  const close = async (): Promise<void> => {
    store?.close();
    await Promise.allSettled([...clients.values()].map((c) => c.close()));
    await sim.close();
  };
  try {
    const config = await configFor(sim, options.instances);
    for (const instance of config.instances) clients.set(instance.id, new GeistClient(instance));
    const theStore = new SnapshotStore(
      config.instances.map((i) => i.id),
      { bus: new EventBus() },
    );
    store = theStore;
    const pollSoonCalls: { instanceId: string; delayMs: number | undefined }[] = [];
    const service = createControlService({
      config,
      store: theStore,
      clients,
      pollSoon: (instanceId, delayMs) => pollSoonCalls.push({ instanceId, delayMs }),
      logger: silentLogger(),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    const poll = async (instanceId: string): Promise<Snapshot> => {
      const client = clients.get(instanceId);
      if (client === undefined) throw new Error(`no client for ${instanceId}`);
      const snapshot = await client.poll();
      theStore.recordSuccess(instanceId, snapshot);
      return snapshot;
    };
    for (const id of options.poll ?? []) await poll(id);
    return {
      sim,
      config,
      store: theStore,
      clients,
      pollSoonCalls,
      service,
      poll,
      run: (instanceId, target, action) =>
        service.execute({ instanceId, target, action, source: { surface: "rest", client: "127.0.0.1" } }),
      storeState: (instanceId, deviceId, index) => {
        const snapshot = theStore.get(instanceId)?.snapshot;
        return snapshot ? findOutlet(snapshot, deviceId, index)?.state : undefined;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

export { waitFor } from "./wait.js";
