/** Largest int64 magnitude a JavaScript number (the domain model's integers) holds exactly. */
const MAX_EXACT_INTEGER = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The rule an integer beyond ±(2^53−1) breaks, shared by every mapper that meets one: the
 * domain model's numbers cannot hold it, and publishing a neighbour instead would publish
 * something the driver did not say.
 */
export const EXACT_RANGE_RULE = `outside the range slicekeeper can publish exactly (±${Number.MAX_SAFE_INTEGER})`;

/**
 * The int64 as a number, or 0 after recording why it cannot be one exactly. Shared by the
 * mappers (not exported from the package).
 */
export function toExactNumber(value: bigint, path: () => string, problems: string[]): number {
  if (value >= -MAX_EXACT_INTEGER && value <= MAX_EXACT_INTEGER) return Number(value);
  problems.push(`${path()}: ${value} is ${EXACT_RANGE_RULE}`);
  return 0;
}
