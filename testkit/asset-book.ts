/**
 * An assets book fed from a running App's store, attached to its control (`App.attachAssets`): what
 * the assets part does in the service, for tests that give the assets as an `AssetsSection` rather
 * than through the configuration. Every instance's status is read again on each of its `snapshot`
 * and `pollFailed` events (a latch's snapshot too, so a cord switched off reads off at once).
 */
import type { App } from "../src/app.js";
import { AssetBook } from "../src/assets/book.js";
import { buildAssetModel } from "../src/assets/model.js";
import type { InstanceReading } from "../src/assets/state.js";
import type { AssetsSection } from "../src/assets/types.js";

export interface FedBook {
  readonly book: AssetBook;
  close(): void;
}

export function feedAssetBook(app: App, section: AssetsSection): FedBook {
  const { model, problems } = buildAssetModel(section);
  if (problems.length > 0)
    throw new Error(`assets: ${problems.map((p) => `${p.key} ${p.problem}`).join("; ")}`);
  const book = new AssetBook(model);
  const read = (id: string): InstanceReading => {
    const status = app.store.get(id);
    const snapshot = status?.snapshot ?? null;
    return {
      id,
      snapshot,
      online: snapshot !== null && status?.consecutiveFailures === 0,
      ...(status === undefined ? {} : { load: status.load }),
    };
  };
  for (const instance of app.config.instances) book.update(read(instance.id), false, Date.now());
  const offs = [
    app.bus.on("snapshot", (e) => book.update(read(e.instanceId), e.fromPoll, Date.now())),
    app.bus.on("pollFailed", (e) => book.update(read(e.instanceId), true, Date.now())),
  ];
  app.attachAssets(() => book);
  return {
    book,
    close: () => {
      for (const off of offs) off();
      app.attachAssets(() => null);
    },
  };
}
