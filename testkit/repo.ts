import { fileURLToPath } from "node:url";

/** The repository root, with a trailing slash (testkit runs from dist/testkit/). */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
