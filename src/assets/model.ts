/**
 * The domain model of assets, feeds and sequences from the configuration, and the rules the configuration alone
 * decides (src/config/asset-model.ts: the loader applies them, exit 2 naming the key). What needs a
 * poll is the resolution's (./state.ts).
 */
export {
  assetProblems,
  buildAssetModel,
  MAX_GAP_SECONDS,
  MAX_START_SECONDS,
  type ModelProblem,
} from "../config/asset-model.js";
