/**
 * How a request names an instance, wherever one does (a REST path or `?instance=`, an MQTT topic, a
 * command forwarded by another replica, an audited request): the configured id exactly, else the
 * one id equal to it ignoring case. The loader refuses two ids that differ only in case, so at most
 * one id matches that way.
 */
export function findInstance<T extends { readonly id: string }>(
  items: Iterable<T>,
  requested: string,
): T | undefined {
  const lower = requested.toLowerCase();
  let folded: T | undefined;
  for (const item of items) {
    if (item.id === requested) return item;
    if (folded === undefined && item.id.toLowerCase() === lower) folded = item;
  }
  return folded;
}
