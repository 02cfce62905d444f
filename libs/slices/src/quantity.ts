/**
 * Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource), exactly: parsed into
 * sign × mantissa × 10^exponent with a BigInt mantissa, so that `1Gi` equals `1024Mi` and
 * `0.5` equals `500m` with no floating-point rounding. The API server compares capacities and
 * counters this way (`Quantity.Cmp`), so the planner must too, or a driver that writes `1Gi`
 * where the stored object says `1073741824` would cause an update on every sync.
 *
 * Grammar (from quantity.go):
 * ```
 * <quantity>        ::= <signedNumber><suffix>
 * <signedNumber>    ::= <number> | <sign><number>
 * <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 * <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
 * <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
 * <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
 * <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (an int32)
 * ```
 */

/** A parsed quantity: `sign × mantissa × 10^exponent`, normalized (no trailing zeros). */
export interface Quantity {
  /** -1, 0 or 1. */
  readonly sign: -1 | 0 | 1;
  /** The digits without trailing zeros; 0n exactly when sign is 0. */
  readonly mantissa: bigint;
  readonly exponent: number;
}

/** The API server's message for a string that is not a quantity (`resource.ErrFormatWrong`). */
export const QUANTITY_FORMAT_MESSAGE =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** {@link QUANTITY} with at least one digit required, for a test without captures. */
const QUANTITY_SYNTAX = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
const EXPONENT = /[eE]([+-]?\d+)$/;

const DECIMAL_SUFFIX_EXPONENTS: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const BINARY_SUFFIX_POWERS: Readonly<Record<string, bigint>> = {
  Ki: 1n << 10n,
  Mi: 1n << 20n,
  Gi: 1n << 30n,
  Ti: 1n << 40n,
  Pi: 1n << 50n,
  Ei: 1n << 60n,
};

const INT32_MAX = 2 ** 31 - 1;

/** Parses a quantity string; undefined when it is not one (the API server would reject it). */
export function parseQuantity(text: string): Quantity | undefined {
  const match = QUANTITY.exec(text);
  if (match === null) return undefined;
  const [, sign = '', whole = '', fraction = '', suffix = ''] = match;
  if (whole === '' && fraction === '') return undefined;

  let mantissa = BigInt(whole + fraction);
  let exponent = fraction.length === 0 ? 0 : -fraction.length;
  const binaryPower = BINARY_SUFFIX_POWERS[suffix];
  if (binaryPower !== undefined) {
    // 2^k is an integer, so a binary suffix folds into the mantissa and the value stays decimal.
    mantissa *= binaryPower;
  } else if (isExponent(suffix)) {
    const power = Number(suffix.slice(1));
    if (Math.abs(power) > INT32_MAX) return undefined;
    exponent += power;
  } else if (suffix !== '') {
    exponent += DECIMAL_SUFFIX_EXPONENTS[suffix] ?? 0; // a lone `E` is exa, not an exponent
  }

  if (mantissa === 0n) return { sign: 0, mantissa: 0n, exponent: 0 };
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent += 1;
  }
  return { sign: sign === '-' ? -1 : 1, mantissa, exponent };
}

/** Whether `text` is a valid quantity; checks the syntax only, so it is cheap. */
export function isQuantity(text: string): boolean {
  if (!QUANTITY_SYNTAX.test(text)) return false;
  const exponent = EXPONENT.exec(text);
  return exponent === null || Math.abs(Number(exponent[1])) <= INT32_MAX;
}

/** -1, 0 or 1 as `a` is less than, equal to or greater than `b`. */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  if (a.sign !== b.sign) return a.sign < b.sign ? -1 : 1;
  if (a.sign === 0) return 0;
  const magnitude = compareMagnitudes(a, b);
  if (a.sign === 1 || magnitude === 0) return magnitude;
  return magnitude === 1 ? -1 : 1;
}

/**
 * Whether two quantity strings denote the same value. Identical strings are equal without
 * parsing (the common case on an unchanged pool); a string that is not a quantity equals only
 * itself.
 */
export function quantitiesEqual(a: string, b: string): boolean {
  if (a === b) return true;
  const left = parseQuantity(a);
  const right = parseQuantity(b);
  if (left === undefined || right === undefined) return false;
  return compareQuantities(left, right) === 0;
}

/** `e3`, `E-2`: a decimal exponent, not the `E` (exa) or `Ei` (exbi) suffix. */
function isExponent(suffix: string): boolean {
  return (suffix.startsWith('e') || suffix.startsWith('E')) && suffix.length > 1 && suffix !== 'Ei';
}

function compareMagnitudes(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const aDigits = a.mantissa.toString().length;
  const bDigits = b.mantissa.toString().length;
  // Position of the leading digit decides unless it is the same; only then are the digits
  // compared, aligned on the shorter one (never a 10^huge allocation for `1e2000000000`).
  const aLead = aDigits + a.exponent;
  const bLead = bDigits + b.exponent;
  if (aLead !== bLead) return aLead < bLead ? -1 : 1;
  let aMantissa = a.mantissa;
  let bMantissa = b.mantissa;
  if (aDigits < bDigits) aMantissa *= 10n ** BigInt(bDigits - aDigits);
  else if (bDigits < aDigits) bMantissa *= 10n ** BigInt(aDigits - bDigits);
  if (aMantissa === bMantissa) return 0;
  return aMantissa < bMantissa ? -1 : 1;
}
