// Lint with type information: floating promises and misused promises are real bugs in a
// service that switches power, so the type-checked rule sets are on for everything we compile.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const GEIST_ONLY = {
  regex: "(^|/)geist(/|$)",
  message:
    "Geist code is reached only through the PduDriver seam: import src/pdu/driver.ts, or add to src/pdu/drivers.ts.",
};
const SNMP_ONLY = {
  regex: "(^|/)pdu/snmp(/|$)|^\\./snmp/(driver|parse|profile|profiles|transport)",
  message:
    "SNMP driver code is reached only through the PduDriver seam: import src/pdu/driver.ts, or add to src/pdu/drivers.ts.",
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
  // The vendor seam (docs/architecture.md): only a family's own files and the driver factory
  // import its code; the core talks to a PduDriver. Tests, testkit and bench may.
  {
    files: ["src/**/*.ts"],
    ignores: ["src/pdu/geist/**", "src/pdu/snmp/**", "src/pdu/drivers.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [GEIST_ONLY, SNMP_ONLY] }] },
  },
  {
    files: ["src/pdu/geist/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [SNMP_ONLY] }] },
  },
  {
    files: ["src/pdu/snmp/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [GEIST_ONLY] }] },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
);
