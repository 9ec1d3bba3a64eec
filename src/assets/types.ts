/**
 * Assets, feeds and sequences (docs/assets.md): the configuration's shapes of assets, feeds and sequences and the
 * domain model built from them. Both are the configuration's (src/config/assets.ts), so that the
 * loader judges them; the core reads them under these names.
 */
export * from "../config/assets.js";
