import { readQuantity } from '@slicekeeper/slices';
import type { Quantity } from '@slicekeeper/slices';

/**
 * `resource.Quantity` in canonical form, as apimachinery writes it back
 * (`Quantity.CanonicalizeBytes`). The server stores quantities in canonical form (`1000` → `1k`,
 * `1024Mi` → `1Gi`, `0.5` → `500m`), and a client that compares what it wrote with what it
 * reads must see the same strings here. Parsing is the production parser of
 * `@slicekeeper/slices`, which reads quantities exactly as `ParseQuantity` does.
 */

export class QuantityError extends Error {
  override readonly name = 'QuantityError';
}

const DECIMAL_SUFFIXES = new Map([
  [-9, 'n'],
  [-6, 'u'],
  [-3, 'm'],
  [0, ''],
  [3, 'k'],
  [6, 'M'],
  [9, 'G'],
  [12, 'T'],
  [15, 'P'],
  [18, 'E'],
]);
const BINARY_BY_POWER = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/**
 * Parses a quantity and returns its canonical string.
 * @throws QuantityError with apimachinery's message when the string is not a quantity.
 */
export function canonicalQuantity(input: string): string {
  const reading = readQuantity(input);
  if (reading.problem !== undefined) throw new QuantityError(reading.problem);
  const { quantity } = reading;
  if (quantity.sign === 0) return '0';
  const signed = quantity.sign === -1 ? -quantity.mantissa : quantity.mantissa;
  // Binary only for a whole number of at least 1Ki in magnitude; anything else would round.
  if (quantity.format === 'BinarySI' && quantity.exponent >= 0) {
    const whole = signed * 10n ** BigInt(quantity.exponent);
    if (whole >= 1024n || whole <= -1024n) return base1024(whole);
  }
  return canonicalDecimal(signed, quantity);
}

function base1024(whole: bigint): string {
  let mantissa = whole;
  let power = 0;
  while (power < BINARY_BY_POWER.length - 1 && mantissa % 1024n === 0n) {
    mantissa /= 1024n;
    power++;
  }
  return `${mantissa}${BINARY_BY_POWER[power] ?? ''}`;
}

/** The mantissa times a power of ten whose exponent is a multiple of three. */
function canonicalDecimal(signed: bigint, quantity: Quantity): string {
  let mantissa = signed;
  let exponent = quantity.exponent;
  const remainder = ((exponent % 3) + 3) % 3;
  if (remainder !== 0) {
    mantissa *= 10n ** BigInt(remainder);
    exponent -= remainder;
  }
  if (quantity.format === 'DecimalExponent') {
    return exponent === 0 ? mantissa.toString() : `${mantissa}e${exponent}`;
  }
  const suffix = DECIMAL_SUFFIXES.get(exponent);
  return suffix === undefined ? `${mantissa}e${exponent}` : `${mantissa}${suffix}`;
}
