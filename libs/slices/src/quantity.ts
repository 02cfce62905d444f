/**
 * Kubernetes `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource), read exactly as
 * `ParseQuantity` reads it: into sign × mantissa × 10^exponent with a BigInt mantissa, so that
 * `1Gi` equals `1024Mi` and `0.5` equals `500m` with no floating-point rounding. The API server
 * compares capacities and counters this way (`Quantity.Cmp`), so the planner must too, or a
 * driver that writes `1Gi` where the stored object says `1073741824` would cause an update on
 * every sync. The kube emulator formats what this reads the way the API server stores it.
 *
 * Grammar (from quantity.go):
 * ```
 * <quantity>        ::= <signedNumber><suffix>
 * <signedNumber>    ::= <number> | <sign><number>
 * <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
 * <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
 * <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
 * <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
 * <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>   (an int64, kept as an int32)
 * ```
 * and what `ParseQuantity` does beyond it: the digits may be missing altogether (`.`, `-`,
 * `Ki` and `e3` are 0), values below a nano round up to `1n`, binary values are capped at
 * 2^63-1, and the exponent wraps around to an int32 (`1e4294967296` is 1).
 */

/** The suffix family of a quantity, which decides how the API server writes it back. */
export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

/** A parsed quantity: `sign × mantissa × 10^exponent`, normalized (no trailing zeros). */
export interface Quantity {
  /** -1, 0 or 1. */
  readonly sign: -1 | 0 | 1;
  /** The digits without trailing zeros; 0n exactly when sign is 0. */
  readonly mantissa: bigint;
  readonly exponent: number;
  /** `BinarySI` for `Ki`…`Ei` (unless below 1), `DecimalExponent` for `e3`, else `DecimalSI`. */
  readonly format: QuantityFormat;
}

/** The API server's message for a string that is not a quantity (`resource.ErrFormatWrong`). */
export const QUANTITY_FORMAT_MESSAGE =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/** The API server's message for an unknown suffix (`resource.ErrSuffix`). */
export const QUANTITY_SUFFIX_MESSAGE = "unable to parse quantity's suffix";
/** The API server's message for a number it cannot read (`resource.ErrNumeric`). */
export const QUANTITY_NUMERIC_MESSAGE = 'unable to parse numeric part of quantity';

/** Why the API server refuses a quantity string, in its words. */
export type QuantityProblem =
  | typeof QUANTITY_FORMAT_MESSAGE
  | typeof QUANTITY_SUFFIX_MESSAGE
  | typeof QUANTITY_NUMERIC_MESSAGE;

/** A string read as a quantity: its value, or why it is none. */
export type QuantityReading =
  | { readonly quantity: Quantity; readonly problem?: undefined }
  | { readonly quantity?: undefined; readonly problem: QuantityProblem };

/** The number and suffix parts of a quantity string (`parseQuantityString`). */
interface Lexed {
  negative: boolean;
  /** Digits before the point without leading zeros; `0` when there are none. */
  num: string;
  /** Digits after the point. */
  denom: string;
  suffix: string;
  /** No digit at all before the suffix (`.`, `-`, `Ki`). */
  digitless: boolean;
}

interface Suffix {
  readonly base: 10 | 2;
  /** Of `base`; an int32, as upstream keeps it. */
  readonly exponent: number;
  readonly format: QuantityFormat;
}

/** The suffixes of a fixed exponent, shared so that reading one allocates nothing. */
const FIXED_SUFFIXES: ReadonlyMap<string, Suffix> = new Map<string, Suffix>([
  ['n', { base: 10, exponent: -9, format: 'DecimalSI' }],
  ['u', { base: 10, exponent: -6, format: 'DecimalSI' }],
  ['m', { base: 10, exponent: -3, format: 'DecimalSI' }],
  ['', { base: 10, exponent: 0, format: 'DecimalSI' }],
  ['k', { base: 10, exponent: 3, format: 'DecimalSI' }],
  ['M', { base: 10, exponent: 6, format: 'DecimalSI' }],
  ['G', { base: 10, exponent: 9, format: 'DecimalSI' }],
  ['T', { base: 10, exponent: 12, format: 'DecimalSI' }],
  ['P', { base: 10, exponent: 15, format: 'DecimalSI' }],
  ['E', { base: 10, exponent: 18, format: 'DecimalSI' }],
  ['Ki', { base: 2, exponent: 10, format: 'BinarySI' }],
  ['Mi', { base: 2, exponent: 20, format: 'BinarySI' }],
  ['Gi', { base: 2, exponent: 30, format: 'BinarySI' }],
  ['Ti', { base: 2, exponent: 40, format: 'BinarySI' }],
  ['Pi', { base: 2, exponent: 50, format: 'BinarySI' }],
  ['Ei', { base: 2, exponent: 60, format: 'BinarySI' }],
]);

const SUFFIX_CHARACTERS = 'eEinumkKMGTP';
const EXPONENT_DIGITS = /^[+-]?\d+$/;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
/** The smallest scale a quantity keeps: nano. */
const MIN_EXPONENT = -9;

/**
 * Reads a quantity as the API server does (without trimming: its JSON decoder trims first).
 * Never allocates more than the string's own digits, whatever the exponent.
 */
export function readQuantity(text: string): QuantityReading {
  const checked = check(text);
  if ('problem' in checked) return checked;
  return { quantity: valueOf(checked.lexed, checked.suffix) };
}

/** Parses a quantity string; undefined when it is not one (the API server would reject it). */
export function parseQuantity(text: string): Quantity | undefined {
  return readQuantity(text).quantity;
}

/** Whether `text` is a valid quantity; checks the syntax only, so it is cheap. */
export function isQuantity(text: string): boolean {
  return quantityProblem(text) === undefined;
}

/**
 * Why the API server would refuse `text` as a quantity (the problem {@link readQuantity}
 * reports), or undefined for a valid one. Checks the syntax only and builds no value, so it is
 * what a validator calls on every device's capacity.
 */
export function quantityProblem(text: string): QuantityProblem | undefined {
  const checked = check(text);
  return 'problem' in checked ? checked.problem : undefined;
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

function check(text: string): { lexed: Lexed; suffix: Suffix } | { problem: QuantityProblem } {
  if (text === '') return { problem: QUANTITY_FORMAT_MESSAGE };
  const lexed = lex(text);
  if (lexed === undefined) return { problem: QUANTITY_FORMAT_MESSAGE };
  const suffix = interpretSuffix(lexed.suffix);
  if (suffix === undefined) return { problem: QUANTITY_SUFFIX_MESSAGE };
  // Upstream reads a number without digits as 0 on its fast path; its slow path (a binary
  // suffix from Pi up, or a scale below nano) parses the digits again and finds none.
  const slowPath = suffix.base === 2 ? suffix.exponent >= 50 : suffix.exponent < MIN_EXPONENT;
  if (lexed.digitless && slowPath) return { problem: QUANTITY_NUMERIC_MESSAGE };
  return { lexed, suffix };
}

/** apimachinery's `parseQuantityString`; undefined where it fails with `ErrFormatWrong`. */
function lex(text: string): Lexed | undefined {
  const end = text.length;
  let pos = 0;
  const negative = text[0] === '-';
  if (negative || text[0] === '+') pos++;
  const numberStart = pos;
  while (pos < end && text[pos] === '0') pos++;
  if (pos >= end) return { negative, num: '0', denom: '', suffix: '', digitless: false };
  const zerosEnd = pos;
  let start = pos;
  while (pos < end && isDigit(text, pos)) pos++;
  const num = pos === start ? '0' : text.slice(start, pos);
  let denom = '';
  if (pos < end && text[pos] === '.') {
    start = ++pos;
    while (pos < end && isDigit(text, pos)) pos++;
    denom = text.slice(start, pos);
  }
  // Leading zeros, other digits before the point, digits after it: none of them at all.
  const digitless = zerosEnd === numberStart && num === '0' && denom === '';
  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARACTERS.includes(text.charAt(pos))) pos++;
  if (pos < end && (text[pos] === '-' || text[pos] === '+')) pos++;
  while (pos < end && isDigit(text, pos)) pos++;
  if (pos < end) return undefined;
  return { negative, num, denom, suffix: text.slice(suffixStart), digitless };
}

/** apimachinery's `suffixHandler.interpret`. */
function interpretSuffix(suffix: string): Suffix | undefined {
  const fixed = FIXED_SUFFIXES.get(suffix);
  if (fixed !== undefined) return fixed;
  if (suffix.length < 2 || (suffix[0] !== 'e' && suffix[0] !== 'E')) return undefined;
  const digits = suffix.slice(1);
  if (!EXPONENT_DIGITS.test(digits)) return undefined;
  const exponent = BigInt(digits);
  if (exponent < INT64_MIN || exponent > INT64_MAX) return undefined;
  // Parsed as an int64, then converted to an int32, wrapping around.
  return { base: 10, exponent: Number(BigInt.asIntN(32, exponent)), format: 'DecimalExponent' };
}

/** The value `ParseQuantity` ends up with: rounded up to a nano, binary capped at int64. */
function valueOf(lexed: Lexed, suffix: Suffix): Quantity {
  let mantissa = BigInt(lexed.num + lexed.denom);
  let exponent = -lexed.denom.length;
  let format = suffix.format;
  if (suffix.base === 2) mantissa <<= BigInt(suffix.exponent);
  else exponent += suffix.exponent;
  if (mantissa === 0n) return { sign: 0, mantissa: 0n, exponent: 0, format };
  ({ mantissa, exponent } = withoutTrailingZeros(mantissa, exponent));
  if (exponent < MIN_EXPONENT) {
    // Rounded up, away from zero: "if you want some resources, you should get some".
    const shift = MIN_EXPONENT - exponent;
    if (digitCount(mantissa) <= shift) mantissa = 1n;
    else {
      const divisor = 10n ** BigInt(shift);
      mantissa = (mantissa + divisor - 1n) / divisor;
    }
    ({ mantissa, exponent } = withoutTrailingZeros(mantissa, MIN_EXPONENT));
  }
  if (format === 'BinarySI') {
    if (exceeds(mantissa, exponent, INT64_MAX)) {
      mantissa = INT64_MAX;
      exponent = 0;
    } else if (digitCount(mantissa) + exponent <= 0) {
      format = 'DecimalSI'; // below 1
    }
  }
  return { sign: lexed.negative ? -1 : 1, mantissa, exponent, format };
}

/** Whether `mantissa × 10^exponent` is greater than `limit`. */
function exceeds(mantissa: bigint, exponent: number, limit: bigint): boolean {
  if (digitCount(mantissa) + exponent > digitCount(limit)) return true;
  return exponent >= 0
    ? mantissa * 10n ** BigInt(exponent) > limit
    : mantissa > limit * 10n ** BigInt(-exponent);
}

function withoutTrailingZeros(
  mantissa: bigint,
  exponent: number,
): { mantissa: bigint; exponent: number } {
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent += 1;
  }
  return { mantissa, exponent };
}

function digitCount(value: bigint): number {
  return value.toString().length;
}

function isDigit(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code >= 48 && code <= 57;
}

function compareMagnitudes(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const aDigits = digitCount(a.mantissa);
  const bDigits = digitCount(b.mantissa);
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
