/**
 * The rule of a `Pdus.<id>.Ratings.Entities` key the schema cannot judge (the loader's, exit 2
 * naming the key); src/pdu/load.ts reads the ratings against each snapshot.
 */
import { nameProblem } from "../names.js";

/** Why a `Ratings.Entities` key is refused, or null. */
export function ratingKeyProblem(key: string): string | null {
  const parts = key.split("/");
  if (parts.length > 2) return "must be an entity key, or a device id and an entity key joined by one '/'";
  for (const part of parts) {
    const problem = nameProblem(part);
    if (problem !== null) return `${parts.length === 2 ? "has a part that " : ""}${problem}`;
  }
  return null;
}
