/**
 * How a request names an instance, wherever one does (a REST path or `?instance=`, an MQTT topic, a
 * command forwarded by another replica, an audited request): the configured id exactly, else the
 * one id equal to it ignoring case. The loader refuses two ids that differ only in case, so at most
 * one id matches that way.
 */
export function findInstance<T extends { readonly id: string }>(
  items: readonly T[],
  requested: string,
): T | undefined {
  // The exact id first, without a lower-cased copy of every id (most requests name it exactly).
  const exact = items.find((item) => item.id === requested);
  if (exact !== undefined) return exact;
  const lower = requested.toLowerCase();
  return items.find((item) => item.id.toLowerCase() === lower);
}
