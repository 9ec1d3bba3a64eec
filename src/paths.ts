/**
 * Files of the built service by their place under dist/src. The service runs as one bundle,
 * dist/src/main.js with its chunks beside it (scripts/bundle.ts), while the tests import the modules
 * tsc writes to the same directory: in both, this code's `import.meta.url` is a file directly in
 * dist/src, so one relative path names the same file.
 */
export function distSrcUrl(relative: string): URL {
  return new URL(relative, import.meta.url);
}
