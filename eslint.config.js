// Lint with type information: floating promises and misused promises are real bugs in a
// service that switches power, so the type-checked rule sets are on for everything we compile.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { folderBoundaries } from "./scripts/lint/boundaries.mjs";

const GEIST_FILES = ["src/pdu/geist/**", "src/pdu/drivers.ts"];
const GEIST_ONLY = {
  regex: "(^|/)geist(/|$)",
  message:
    "Geist code is reached only through the PduDriver seam: import src/pdu/driver.ts, or add to src/pdu/drivers.ts.",
};
const SNMP_FILES = ["src/pdu/snmp/**", "src/pdu/drivers.ts"];
const SNMP_ONLY = {
  regex: "(^|/)pdu/snmp(/|$)|^\\./snmp/(driver|parse|profile|profiles|transport)",
  message:
    "SNMP driver code is reached only through the PduDriver seam: import src/pdu/driver.ts, or add to src/pdu/drivers.ts.",
};
const KUBERNETES_ENGINE = "src/cluster/kubernetes.ts";
const KUBERNETES_CLIENT = {
  name: "@kubernetes/client-node",
  message: "The Kubernetes client is reached only through the LeaseStore seam (src/cluster/kubernetes.ts).",
};

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", "bench/results/**", "deploy/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's describe/it return promises the runner itself tracks.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            {
              from: "package",
              package: "node:test",
              name: ["describe", "it", "test", "suite", "before", "after"],
            },
          ],
        },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      eqeqeq: ["error", "always"],
    },
  },
  // The seams (docs/architecture.md): only a PDU family's own files and the driver factory import
  // its code, the core talks to a PduDriver; only the Kubernetes engine of the lease seam imports
  // the Kubernetes client (docs/cluster.md). Tests, testkit and bench may import any of them.
  {
    files: ["src/**/*.ts"],
    ignores: [...GEIST_FILES, ...SNMP_FILES, KUBERNETES_ENGINE],
    rules: {
      "no-restricted-imports": ["error", { patterns: [GEIST_ONLY, SNMP_ONLY], paths: [KUBERNETES_CLIENT] }],
    },
  },
  {
    files: ["src/pdu/geist/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [SNMP_ONLY], paths: [KUBERNETES_CLIENT] }] },
  },
  {
    files: ["src/pdu/snmp/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [GEIST_ONLY], paths: [KUBERNETES_CLIENT] }] },
  },
  {
    files: [KUBERNETES_ENGINE],
    rules: { "no-restricted-imports": ["error", { patterns: [GEIST_ONLY, SNMP_ONLY] }] },
  },
  // Function length: a function of the service fits on one screen, so a reader sees all of it.
  // Blank lines and comments do not count; an IIFE counts as the function it is. Only src/ is held
  // to it: a test's describe block groups its cases, and a bench, a script or a testkit harness
  // reads top to bottom as one scenario; none of them ships.
  {
    files: ["src/**/*.ts"],
    rules: {
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  // Folder boundaries: which src/ folder may import which (the table is in
  // scripts/lint/boundaries.mjs, described in docs/architecture.md). Import cycles are checked by
  // scripts/lint/check-cycles.mjs, which `npm run lint` runs after eslint.
  {
    files: ["src/**/*.ts"],
    plugins: { local: { rules: { "folder-boundaries": folderBoundaries } } },
    rules: { "local/folder-boundaries": "error" },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // The lint scripts run on Node without a build.
    files: ["scripts/lint/*.mjs"],
    languageOptions: { globals: { console: "readonly", process: "readonly" } },
  },
);
