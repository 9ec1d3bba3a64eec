/**
 * A real etcd for tests (Debian's `etcd-server`, /usr/bin/etcd): a cluster of one or more members
 * on free loopback ports, each with a temporary data directory, started together. Members can be
 * killed, paused and started again on the same ports and data (so stopping the raft leader, or the
 * whole cluster for a while, is a real test). `close()` kills every member and removes the data.
 *
 * Options: TLS on the client URLs (the process's self-signed certificate for 127.0.0.1, which is
 * then the CA to trust), client certificates (`--client-cert-auth`: a private CA signs the server's
 * certificate and a client certificate for user `root`), and `enableAuth` (a root user, auth on)
 * through the JSON gateway.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generate } from "selfsigned";
import { selfSignedCertificate } from "../src/simulator/cert.js";
import { freePort } from "./repo.js";
import { waitFor } from "./wait.js";

export const ETCD = process.env.ETCD_BIN ?? "/usr/bin/etcd";

export interface EtcdClusterOptions {
  /** Members (default 3). */
  readonly members?: number;
  /** Serve the client URLs over https with the self-signed certificate (see {@link EtcdCluster.ca}). */
  readonly tls?: boolean;
  /**
   * Serve them over https with a certificate of a private CA and require a client certificate that
   * CA signed (`--client-cert-auth`); {@link EtcdCluster.clientCertificate} is one (CN `root`).
   */
  readonly clientCerts?: boolean;
}

interface Tls {
  /** What a client trusts: the self-signed certificate, or the private CA's. */
  readonly ca: string;
  readonly keyFile: string;
  readonly certFile: string;
  /** With client certificates: the CA's file, and a client certificate it signed. */
  readonly caFile: string | null;
  readonly client: { readonly cert: string; readonly key: string } | null;
}

const DAY_MS = 86_400_000;

/** A private CA, a server certificate for 127.0.0.1 and a client certificate for user `root`, all signed by it. */
async function privateCa(): Promise<{
  ca: string;
  server: { cert: string; key: string };
  client: { cert: string; key: string };
}> {
  const validity = {
    notBeforeDate: new Date(Date.now() - DAY_MS),
    notAfterDate: new Date(Date.now() + 30 * DAY_MS),
  };
  const ca = await generate([{ name: "commonName", value: "pdu-bridge test CA" }], {
    keyType: "ec",
    algorithm: "sha256",
    ...validity,
    extensions: [
      { name: "basicConstraints", cA: true, critical: true },
      { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const signed = (
    cn: string,
    usage: Record<string, boolean>,
    altNames: { type: 2 | 7; value?: string; ip?: string }[],
  ) =>
    generate([{ name: "commonName", value: cn }], {
      keyType: "ec",
      algorithm: "sha256",
      ...validity,
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: "basicConstraints", cA: false },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
        { name: "extKeyUsage", ...usage },
        ...(altNames.length === 0 ? [] : [{ name: "subjectAltName" as const, altNames }]),
      ],
    });
  const server = await signed("localhost", { serverAuth: true, clientAuth: true }, [
    { type: 2, value: "localhost" },
    { type: 7, ip: "127.0.0.1" },
  ]);
  const client = await signed("root", { clientAuth: true }, []);
  return {
    ca: ca.cert,
    server: { cert: server.cert, key: server.private },
    client: { cert: client.cert, key: client.private },
  };
}

interface Member {
  readonly name: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
  child: ChildProcess | null;
  output: string;
}

/** A member that was started and has ended on its own (one stopped on purpose has no child). */
const hasExited = (m: Member): boolean =>
  m.child !== null && (m.child.exitCode !== null || m.child.signalCode !== null);

export class EtcdCluster {
  readonly #dir: string;
  readonly #members: Member[];
  readonly #initialCluster: string;
  readonly #token: string;
  readonly #tls: Tls | null;

  private constructor(dir: string, members: Member[], tls: Tls | null) {
    this.#dir = dir;
    this.#members = members;
    this.#tls = tls;
    this.#initialCluster = members.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(",");
    this.#token = `pdu-bridge-test-${process.pid}-${Date.now()}`;
  }

  static async start(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
    // A port found free can be taken by another test before etcd binds it; a member that exits
    // while the cluster starts means a new set of ports.
    for (let attempt = 1; ; attempt++) {
      const cluster = await EtcdCluster.#create(options);
      try {
        for (let i = 0; i < cluster.size; i++) cluster.#spawn(i);
        await cluster.waitHealthy();
        return cluster;
      } catch (error) {
        const exited = cluster.#members.some(hasExited);
        await cluster.close();
        if (!exited || attempt === 3) throw error;
      }
    }
  }

  static async #create(options: EtcdClusterOptions): Promise<EtcdCluster> {
    // Shared memory when there is some: etcd fsyncs every write, which a busy disk makes slow.
    const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
    const dir = await mkdtemp(join(base, "pdu-bridge-etcd-"));
    const count = options.members ?? 3;
    const members: Member[] = [];
    for (let i = 0; i < count; i++) {
      members.push({
        name: `e${i}`,
        clientPort: await freePort(),
        peerPort: await freePort(),
        dataDir: join(dir, `e${i}`),
        child: null,
        output: "",
      });
    }
    let tls: Tls | null = null;
    const keyFile = join(dir, "key.pem");
    const certFile = join(dir, "cert.pem");
    if (options.clientCerts === true) {
      const { ca, server, client } = await privateCa();
      const caFile = join(dir, "ca.pem");
      await Promise.all([
        writeFile(keyFile, server.key),
        writeFile(certFile, server.cert),
        writeFile(caFile, ca),
      ]);
      tls = { ca, keyFile, certFile, caFile, client };
    } else if (options.tls === true) {
      const { key, cert } = await selfSignedCertificate();
      await Promise.all([writeFile(keyFile, key), writeFile(certFile, cert)]);
      tls = { ca: cert, keyFile, certFile, caFile: null, client: null };
    }
    return new EtcdCluster(dir, members, tls);
  }

  /** The client URLs, member by member. */
  get endpoints(): string[] {
    const scheme = this.#tls === null ? "http" : "https";
    return this.#members.map((m) => `${scheme}://127.0.0.1:${m.clientPort}`);
  }

  /** The CA a client trusts for the TLS endpoints (null without TLS). */
  get ca(): string | null {
    return this.#tls?.ca ?? null;
  }

  /** A client certificate the members accept (`clientCerts`), else null. */
  get clientCertificate(): { readonly cert: string; readonly key: string } | null {
    return this.#tls?.client ?? null;
  }

  get size(): number {
    return this.#members.length;
  }

  /** What each member wrote (for assertion messages). */
  get output(): string {
    return this.#members.map((m) => `--- ${m.name}\n${m.output.slice(-4000)}`).join("\n");
  }

  #spawn(index: number): void {
    const m = this.#members[index]!;
    const scheme = this.#tls === null ? "http" : "https";
    const args = [
      "--name",
      m.name,
      "--data-dir",
      m.dataDir,
      "--listen-client-urls",
      `${scheme}://127.0.0.1:${m.clientPort}`,
      "--advertise-client-urls",
      `${scheme}://127.0.0.1:${m.clientPort}`,
      "--listen-peer-urls",
      `http://127.0.0.1:${m.peerPort}`,
      "--initial-advertise-peer-urls",
      `http://127.0.0.1:${m.peerPort}`,
      "--initial-cluster",
      this.#initialCluster,
      "--initial-cluster-token",
      this.#token,
      "--initial-cluster-state",
      "new",
      "--logger",
      "zap",
      "--log-level",
      "warn",
      ...(this.#tls === null ? [] : ["--cert-file", this.#tls.certFile, "--key-file", this.#tls.keyFile]),
      ...(this.#tls === null || this.#tls.caFile === null
        ? []
        : ["--client-cert-auth", "--trusted-ca-file", this.#tls.caFile]),
    ];
    const child = spawn(ETCD, args, { stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk: Buffer) => {
      m.output = (m.output + chunk.toString("utf8")).slice(-20_000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("error", (error) => keep(Buffer.from(`spawn error: ${error.message}\n`)));
    m.child = child;
  }

  /**
   * Resolves once every running member reports itself healthy (it has a leader); throws at once,
   * with what the members wrote, when one of them has exited.
   */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const outcome = await waitFor(
      async () => {
        const gone = this.#members.find(hasExited);
        if (gone !== undefined) return gone.name;
        for (const [i, m] of this.#members.entries()) {
          if (m.child === null) continue;
          const status = await this.#get(i, "/health");
          if (status?.health !== "true") return false;
        }
        return true;
      },
      () => `etcd members healthy\n${this.output}`,
      timeoutMs,
      100,
    );
    if (outcome !== true) throw new Error(`etcd member ${outcome} exited\n${this.output}`);
  }

  /** Index of the member that is the raft leader now (asks the running members). */
  async leader(): Promise<number> {
    return waitFor(
      async () => {
        for (const [i, m] of this.#members.entries()) {
          if (m.child === null) continue;
          const status = await this.#post(i, "/v3/maintenance/status", {});
          const leader = typeof status?.leader === "string" ? status.leader : null;
          const header = status?.header as { member_id?: string } | undefined;
          if (leader !== null && leader !== "0" && header?.member_id === leader) return i;
        }
        return null;
      },
      "an etcd leader",
      20_000,
      100,
    );
  }

  /** Kills a member (SIGKILL unless told otherwise) and waits for it to exit. */
  async stop(index: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const m = this.#members[index]!;
    const child = m.child;
    m.child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    if (child.signalCode === null) child.kill("SIGCONT");
    child.kill(signal);
    await exited;
  }

  /** Starts a stopped member again, on its ports and data. */
  restart(index: number): void {
    if (this.#members[index]!.child !== null) throw new Error(`etcd member ${index} is running`);
    this.#spawn(index);
  }

  /** SIGSTOP / SIGCONT: a member that hangs rather than refuses. */
  pause(index: number): void {
    this.#members[index]!.child?.kill("SIGSTOP");
  }

  resume(index: number): void {
    this.#members[index]!.child?.kill("SIGCONT");
  }

  /** Adds user `root` with this password, gives it the root role and turns auth on. */
  async enableAuth(password: string): Promise<void> {
    for (const [path, body] of [
      ["/v3/auth/user/add", { name: "root", password }],
      ["/v3/auth/user/grant", { user: "root", role: "root" }],
      ["/v3/auth/enable", {}],
    ] as const) {
      const answer = await this.#post(0, path, body);
      if (answer === null || "error" in answer) throw new Error(`etcd ${path}: ${JSON.stringify(answer)}`);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.#members.map((_, i) => this.stop(i)));
    await rm(this.#dir, { recursive: true, force: true });
  }

  async #get(index: number, path: string): Promise<Record<string, unknown> | null> {
    return this.#fetch(index, path, { method: "GET" });
  }

  async #post(index: number, path: string, body: unknown): Promise<Record<string, unknown> | null> {
    return this.#fetch(index, path, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
  }

  async #fetch(index: number, path: string, init: RequestInit): Promise<Record<string, unknown> | null> {
    const url = `${this.endpoints[index]!}${path}`;
    try {
      if (this.#tls !== null) return await httpsJson(url, init, this.#tls.ca, this.#tls.client);
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(2000) });
      return (await response.json()) as Record<string, unknown>;
    } catch {
      return null;
    }
  }
}

/** A JSON request over https trusting `ca` (the global fetch cannot take a CA without undici's Agent). */
async function httpsJson(
  url: string,
  init: RequestInit,
  ca: string,
  client: { readonly cert: string; readonly key: string } | null,
): Promise<Record<string, unknown>> {
  const { Agent, request } = await import("undici");
  const agent = new Agent({ connect: { ca, ...(client ?? {}) } });
  try {
    const response = await request(url, {
      method: init.method === "POST" ? "POST" : "GET",
      body: typeof init.body === "string" ? init.body : null,
      headers: { "content-type": "application/json" },
      dispatcher: agent,
      signal: AbortSignal.timeout(2000),
    });
    return (await response.body.json()) as Record<string, unknown>;
  } finally {
    await agent.close();
  }
}
