import type { PassThroughFields } from '@slicekeeper/contracts';
import { EXACT_RANGE_RULE } from './exact-number';

/** What JSON.parse hands a reviver beside the value (Node 21+): the primitive's source text. */
interface ReviverContext {
  source?: string;
}

/** A number of the driver's text that a JavaScript number would not hold as written. */
class InexactNumber {
  constructor(
    readonly source: string,
    readonly rule: string,
  ) {}
}

/** An integer literal, as JSON writes one: no fraction, no exponent. */
const INTEGER_LITERAL = /^-?\d+$/;

/** A member name printed after a dot; any other is printed in brackets. */
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * The pass-through fields of a device or pool (`pass_through_json`), or undefined for none
 * (empty text) or after recording why the text cannot be used, at `path` (e.g.
 * `pools[0].devices[2].passThrough`). The text must be one JSON object; each number in it must
 * survive as a JavaScript number, as the domain model holds it: an integer literal beyond
 * ±(2^53−1), or a number beyond a double's range, is refused with the member's path, since
 * publishing a rounded value would publish something the driver did not say. Whether the
 * members name typed fields is the validator's question, what they mean the API server's.
 */
export function toPassThrough(
  json: string,
  path: () => string,
  problems: string[],
): PassThroughFields | undefined {
  if (json === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json, revive);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    problems.push(`${path()}: must be a JSON object (is not JSON: ${reason})`);
    return undefined;
  }
  if (!isJsonObject(parsed)) {
    problems.push(`${path()}: must be a JSON object (is ${describe(parsed)})`);
    return undefined;
  }
  const before = problems.length;
  findInexact(parsed, path, problems);
  return problems.length === before ? parsed : undefined;
}

/** The text of pass-through fields: empty for none. */
export function fromPassThrough(fields: PassThroughFields | undefined): string {
  return fields === undefined ? '' : JSON.stringify(fields);
}

/**
 * Marks each number the domain model would not carry as written; {@link findInexact} reports
 * them by path. The integer rule is that of int attributes (any integer beyond ±(2^53−1)),
 * even for the few such literals a double happens to hold: one rule for every int64.
 */
function revive(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== 'number') return value;
  const source = context?.source ?? String(value);
  if (!Number.isFinite(value)) {
    return new InexactNumber(source, 'outside the range of a double');
  }
  if (INTEGER_LITERAL.test(source) && !Number.isSafeInteger(value)) {
    return new InexactNumber(source, EXACT_RANGE_RULE);
  }
  return value;
}

function findInexact(value: unknown, path: () => string, problems: string[]): void {
  if (value instanceof InexactNumber) {
    problems.push(`${path()}: ${value.source} is ${value.rule}`);
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => {
      findInexact(item, () => `${path()}[${i}]`, problems);
    });
  } else if (isJsonObject(value)) {
    for (const [key, member] of Object.entries(value)) {
      const step = IDENTIFIER.test(key) ? `.${key}` : `[${key}]`;
      findInexact(member, () => `${path()}${step}`, problems);
    }
  }
}

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof InexactNumber)
  );
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value instanceof InexactNumber) return 'a number';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
