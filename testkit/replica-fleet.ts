/**
 * Several pdu-bridge replicas as real processes sharing a fleet (docs/cluster.md): a real etcd
 * cluster (./etcd.ts), mosquitto, one Geist simulator per instance in this process, and N
 * `node dist/src/main.js --config <file>` children that differ only in `Cluster.MemberName` (and
 * their listener ports). Everything a test asserts is read from outside: the simulators' journals
 * and readers (which replica wrote and polled what), the bucket leases in etcd, MQTT as a
 * subscriber sees it.
 */
import { randomUUID } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { EtcdLeaseStore } from "../src/cluster/etcd.js";
import { startSimulator, type Simulator } from "../src/simulator/index.js";
import { childEnv, CliProcess, tempDir } from "./cli-process.js";
import { EtcdCluster } from "./etcd.js";
import { Mosquitto } from "./mosquitto.js";
import { Recorder } from "./mqtt-client.js";
import { freePort } from "./repo.js";
import { sleep, waitFor } from "./wait.js";

export const PARENT = "pdu";

/** A replica's `Cluster:` section on etcd (timings in seconds), as config lines. */
export function clusterConfigLines(o: {
  readonly member: string;
  /** `Cluster.AdvertiseUrl`, or null for none. */
  readonly advertiseUrl?: string | null;
  readonly buckets: number;
  readonly leaseDuration: number;
  readonly renewDeadline: number;
  readonly retryPeriod: number;
  readonly endpoints: readonly string[];
  readonly prefix: string;
  /** `Cluster.Etcd.CaFile`, for https endpoints. */
  readonly caFile?: string | null;
  /** `Cluster.PeerNetworks`, when not the default. */
  readonly peerNetworks?: readonly string[] | null;
}): string[] {
  return [
    "Cluster:",
    "  Enabled: true",
    "  Backend: etcd",
    `  MemberName: ${o.member}`,
    ...(o.advertiseUrl === undefined || o.advertiseUrl === null ? [] : [`  AdvertiseUrl: ${o.advertiseUrl}`]),
    ...(o.peerNetworks === undefined || o.peerNetworks === null
      ? []
      : [`  PeerNetworks: ${JSON.stringify(o.peerNetworks)}`]),
    `  Buckets: ${o.buckets}`,
    `  LeaseDurationSeconds: ${o.leaseDuration}`,
    `  RenewDeadlineSeconds: ${o.renewDeadline}`,
    `  RetryPeriodSeconds: ${o.retryPeriod}`,
    `  Etcd: { Endpoints: ${JSON.stringify(o.endpoints)}, Prefix: ${JSON.stringify(o.prefix)}${o.caFile === undefined || o.caFile === null ? "" : `, CaFile: ${JSON.stringify(o.caFile)}`} }`,
  ];
}

/**
 * Bucket → the member named in its lease, read from the installation's leases as any client could
 * (whether or not the lease is still valid; released leases left out).
 */
export async function bucketHolders(leases: EtcdLeaseStore): Promise<Map<number, string>> {
  const list = await leases.list(AbortSignal.timeout(5000));
  const map = new Map<number, string>();
  for (const lease of list.leases) {
    const match = /^bucket-(\d+)$/.exec(lease.name);
    const holder = lease.record?.holder ?? "";
    if (match !== null && holder !== "") map.set(Number(match[1]), holder.split("/")[0] ?? "");
  }
  return map;
}

export interface ReplicaFleetOptions {
  readonly instances: number;
  readonly buckets: number;
  readonly etcdMembers?: number;
  /** Seconds; default 3 / 2 / 0.5 (a takeover in about 3.5 s). */
  readonly leaseDuration?: number;
  readonly renewDeadline?: number;
  readonly retryPeriod?: number;
  /** Seconds between polls; default 1. */
  readonly pollInterval?: number;
  /** Outlets of each simulator; default 2. */
  readonly outlets?: number;
  /**
   * Each replica's health listener (with /metrics) and REST API (main thread, key {@link FLEET_API_KEY})
   * on ports of its own; default off.
   */
  readonly listeners?: boolean;
  /**
   * The REST API key every replica shares; given: each replica's API listens on a loopback port of
   * its own, advertised to the others (`Cluster.AdvertiseUrl`). Default: no API.
   */
  readonly apiKey?: string | null;
  /**
   * etcd as production runs it (docs/cluster.md): client URLs over TLS with a private CA, and
   * authentication on (user `root`, {@link FLEET_ETCD_PASSWORD}); the replicas get the CA file and the
   * credentials (SERVICE_ETCD_USERNAME / _PASSWORD). Default off.
   */
  readonly etcdSecure?: boolean;
  /** `Cluster.PeerNetworks` of every replica; default: the service's default. */
  readonly peerNetworks?: readonly string[] | null;
  /** More top-level sections of every replica's configuration (YAML), given the simulators; default none. */
  readonly extraConfig?: ((sims: ReadonlyMap<string, Simulator>) => string) | null;
  /** More environment variables of every replica (secrets of the extra sections); default none. */
  readonly env?: Readonly<Record<string, string>>;
}

/** The etcd root user's password of a fleet with `etcdSecure`. */
export const FLEET_ETCD_PASSWORD = "replica-fleet-etcd-6b2f0d";

/** The REST API key of every replica when `listeners` is on and no `apiKey` is given. */
export const FLEET_API_KEY = "replica-fleet-key-7c41d9";
/** The replicas' shared secret (SERVICE_CLUSTER_SECRET) of every fleet. */
export const FLEET_SECRET = "replica-fleet-secret-5d0c7e41a9b2f368";

export interface RunningReplica {
  readonly name: string;
  readonly process: CliProcess;
  /** Its health listener's port (`listeners`), else null. */
  readonly healthPort: number | null;
  /** Its REST API's port (`listeners` or `apiKey`), else null. */
  readonly apiPort: number | null;
  /** `http://127.0.0.1:<port>` of its REST API, when the fleet has one. */
  readonly api: string | null;
}

export class ReplicaFleet {
  readonly options: Required<ReplicaFleetOptions>;
  readonly etcd: EtcdCluster;
  readonly mqtt: Mosquitto;
  /** Instance id → its simulator. */
  readonly sims: ReadonlyMap<string, Simulator>;
  readonly replicas = new Map<string, RunningReplica>();
  readonly recorder: Recorder;
  readonly prefix: string;
  readonly #dir: { path: string; remove(): Promise<void> };
  readonly #leases: EtcdLeaseStore;

  private constructor(
    options: Required<ReplicaFleetOptions>,
    etcd: EtcdCluster,
    mqtt: Mosquitto,
    sims: Map<string, Simulator>,
    recorder: Recorder,
    dir: { path: string; remove(): Promise<void> },
    prefix: string,
  ) {
    this.options = options;
    this.etcd = etcd;
    this.mqtt = mqtt;
    this.sims = sims;
    this.recorder = recorder;
    this.#dir = dir;
    this.prefix = prefix;
    this.#leases = new EtcdLeaseStore({
      endpoints: etcd.endpoints,
      prefix,
      ca: etcd.ca,
      ...(options.etcdSecure ? { username: "root", password: FLEET_ETCD_PASSWORD } : {}),
      // The test's own reads may wait longer than a replica's rounds do (a loaded machine, TLS).
      attemptTimeoutMs: 2500,
    });
  }

  static async start(o: ReplicaFleetOptions): Promise<ReplicaFleet> {
    const options: Required<ReplicaFleetOptions> = {
      etcdMembers: 3,
      leaseDuration: 3,
      renewDeadline: 2,
      retryPeriod: 0.5,
      pollInterval: 1,
      outlets: 2,
      listeners: false,
      apiKey: null,
      etcdSecure: false,
      peerNetworks: null,
      extraConfig: null,
      env: {},
      ...o,
    };
    const dir = await tempDir();
    const sims = new Map<string, Simulator>();
    let etcd: EtcdCluster | null = null;
    let mqtt: Mosquitto | null = null;
    try {
      etcd = await EtcdCluster.start({ members: options.etcdMembers, tls: options.etcdSecure });
      if (options.etcdSecure) {
        await etcd.enableAuth(FLEET_ETCD_PASSWORD);
        await writeFile(join(dir.path, "etcd-ca.pem"), etcd.ca ?? "");
      }
      mqtt = await Mosquitto.start();
      for (let k = 0; k < options.instances; k++) {
        sims.set(
          `rack-${String(k).padStart(3, "0")}`,
          await startSimulator({ outlets: options.outlets, seed: k + 1 }),
        );
      }
      const recorder = await Recorder.connect(mqtt, [`${PARENT}/#`, "homeassistant/#"]);
      return new ReplicaFleet(options, etcd, mqtt, sims, recorder, dir, `/fleet-${randomUUID()}/`);
    } catch (error) {
      await Promise.allSettled([...sims.values()].map((s) => s.close()));
      await mqtt?.stop();
      await etcd?.close();
      await dir.remove();
      throw error;
    }
  }

  /** The configuration of one replica (all share it but the member name). */
  configText(name: string, apiPort: number | null = null): string {
    const o = this.options;
    const key = o.apiKey ?? (o.listeners ? FLEET_API_KEY : null);
    const api =
      apiPort === null || key === null
        ? ["Api: { Enabled: false }"]
        : [
            `Api: { Enabled: true, Bind: 127.0.0.1, Port: ${apiPort}, ApiKey: ${JSON.stringify(key)}${o.listeners ? ", Worker: false" : ""} }`,
          ];
    const lines = [
      "Mqtt:",
      `  Connection: { Host: 127.0.0.1, Port: ${this.mqtt.port} }`,
      `  ParentTopic: ${PARENT}`,
      ...api,
      ...(o.listeners
        ? ["Health: { Enabled: true, Bind: 127.0.0.1, Port: 0 }", "Metrics: { Enabled: true }"]
        : ["Health: { Enabled: false }", "Metrics: { Enabled: false }"]),
      "Logging: { Level: info }",
      ...clusterConfigLines({
        member: name,
        advertiseUrl: apiPort === null ? null : `http://127.0.0.1:${apiPort}`,
        buckets: o.buckets,
        leaseDuration: o.leaseDuration,
        renewDeadline: o.renewDeadline,
        retryPeriod: o.retryPeriod,
        endpoints: this.etcd.endpoints,
        prefix: this.prefix,
        caFile: o.etcdSecure ? join(this.#dir.path, "etcd-ca.pem") : null,
        peerNetworks: o.peerNetworks,
      }),
      "Pdus:",
    ];
    for (const [id, sim] of this.sims) {
      lines.push(
        `  ${id}:`,
        `    Connection: { Host: 127.0.0.1, Port: ${sim.port}, Timeout: 2 }`,
        "    Credentials: { Username: admin, Password: admin }",
        `    PollInterval: ${o.pollInterval}`,
        "    ActionsEnabled: true",
        // The cluster tests switch outlets in quick succession across replicas; relay protection
        // has its own test (test/app/relay-protection.test.ts).
        "    RelayProtection: 0",
      );
    }
    if (o.extraConfig !== null) lines.push(o.extraConfig(this.sims).trimEnd());
    return `${lines.join("\n")}\n`;
  }

  /** Starts a replica and waits for its start-up line. */
  async add(name: string): Promise<RunningReplica> {
    const file = join(this.#dir.path, `${name}.yaml`);
    const apiPort = this.options.apiKey === null && !this.options.listeners ? null : await freePort();
    await writeFile(file, this.configText(name, apiPort));
    const process = CliProcess.spawn(
      ["--config", file],
      childEnv({
        SERVICE_CLUSTER_SECRET: FLEET_SECRET,
        ...this.options.env,
        ...(this.options.etcdSecure
          ? { SERVICE_ETCD_USERNAME: "root", SERVICE_ETCD_PASSWORD: FLEET_ETCD_PASSWORD }
          : {}),
      }),
      `replica ${name}`,
    );
    const api = apiPort === null ? null : `http://127.0.0.1:${apiPort}`;
    this.replicas.set(name, { name, process, healthPort: null, apiPort, api });
    const ports = await process.started(30_000);
    const replica = {
      name,
      process,
      healthPort: ports.healthPort,
      apiPort,
      api,
    };
    this.replicas.set(name, replica);
    return replica;
  }

  get(name: string): RunningReplica {
    const replica = this.replicas.get(name);
    if (replica === undefined) throw new Error(`no replica ${name}`);
    return replica;
  }

  /** Bucket → the member named in its lease (whether or not it is still valid). */
  holders(): Promise<Map<number, string>> {
    return bucketHolders(this.#leases);
  }

  /** The installation's leases, as any client that can write the prefix sees them (tests of hostile writers). */
  get leases(): EtcdLeaseStore {
    return this.#leases;
  }

  /** Member name → the identity (`<member>/<incarnation>`) holding its member lease. */
  async identities(): Promise<Map<string, string>> {
    const list = await this.#leases.list(AbortSignal.timeout(5000));
    const map = new Map<string, string>();
    for (const lease of list.leases) {
      const match = /^member-(.+)$/.exec(lease.name);
      const holder = lease.record?.holder ?? "";
      if (match !== null && holder !== "") map.set(match[1]!, holder);
    }
    return map;
  }

  /** Member name → whether its member lease says it is ready (what the buckets are spread over). */
  async members(): Promise<Map<string, boolean>> {
    const list = await this.#leases.list(AbortSignal.timeout(5000));
    const map = new Map<string, boolean>();
    for (const lease of list.leases) {
      const match = /^member-(.+)$/.exec(lease.name);
      const record = lease.record;
      if (match === null || record === null || record.holder === "") continue;
      let ready = false;
      try {
        ready = (JSON.parse(record.payload) as { ready?: unknown }).ready === true;
      } catch {
        ready = false;
      }
      map.set(match[1]!, ready);
    }
    return map;
  }

  /**
   * Waits until every bucket is held by the named replicas, each holding within one of the others,
   * and returns the holders and how many each holds.
   */
  async balanced(names: readonly string[], timeoutMs = 40_000) {
    return waitFor(
      async () => {
        const holders = await this.holders();
        if (holders.size !== this.options.buckets) return undefined;
        const counts = new Map(names.map((n) => [n, 0]));
        for (const member of holders.values()) {
          if (!counts.has(member)) return undefined;
          counts.set(member, (counts.get(member) ?? 0) + 1);
        }
        const values = [...counts.values()];
        return Math.max(...values) - Math.min(...values) <= 1 ? { holders, counts } : undefined;
      },
      `every bucket held by ${names.join(", ")} within one of even`,
      timeoutMs,
    );
  }

  /** Member → buckets held, from the leases. */
  async counts(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const member of (await this.holders()).values()) counts.set(member, (counts.get(member) ?? 0) + 1);
    return counts;
  }

  /** Instance id → the replicas that read its PDU since `since` (epoch ms). */
  pollers(since: number): Map<string, string[]> {
    const map = new Map<string, string[]>();
    for (const [id, sim] of this.sims) {
      map.set(
        id,
        [...sim.pollers(since).keys()].map((m) => m ?? "(none)"),
      );
    }
    return map;
  }

  /**
   * A window of `windowMs` in steady state: the buckets balanced among `names` and held by the same
   * replicas from 1.5 s before the window to its end (balance within one is reached while the
   * preferred holders are still taking buckets over; a handover inside the window is not steady).
   */
  async steadyWindow(names: readonly string[], windowMs = 3000, timeoutMs = 90_000) {
    return waitFor(
      async () => {
        const { holders } = await this.balanced(names);
        await sleep(1500);
        const since = Date.now();
        await sleep(windowMs);
        const now = await this.holders();
        const same = now.size === holders.size && [...now].every(([b, m]) => holders.get(b) === m);
        return same ? { holders, since } : undefined;
      },
      `the bucket holders among ${names.join(", ")} unchanged for ${windowMs + 1500} ms`,
      timeoutMs,
    );
  }

  /** Instance → the one replica that polled it since `since`; `wrong` lists the others. */
  pollersIn(since: number): { by: Map<string, string>; wrong: string[] } {
    const wrong: string[] = [];
    const by = new Map<string, string>();
    for (const [id, members] of this.pollers(since)) {
      if (members.length === 1) by.set(id, members[0]!);
      else wrong.push(`${id}: ${members.join(", ") || "nobody"}`);
    }
    return { by, wrong };
  }

  /** Every executed write of every simulator, with its instance. */
  journal(): {
    instance: string;
    member: string | null;
    time: number;
    path: string;
    cmd: string;
    data: Record<string, unknown>;
  }[] {
    return [...this.sims].flatMap(([instance, sim]) =>
      sim.journal().map((e) => ({
        instance,
        member: e.member,
        time: e.time,
        path: e.path,
        cmd: e.cmd,
        data: { ...e.data },
      })),
    );
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.replicas.values()].map((r) => r.process.kill()));
    this.replicas.clear();
    await this.recorder.client.endAsync().catch(() => undefined);
    await this.#leases.close();
    await Promise.allSettled([...this.sims.values()].map((s) => s.close()));
    await this.mqtt.stop();
    await this.etcd.close();
    await this.#dir.remove();
  }
}
