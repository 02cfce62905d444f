/**
 * `resource.Quantity` parsing and canonical formatting, as apimachinery does it. The server
 * stores quantities in canonical form (`1000` → `1k`, `1024Mi` → `1Gi`, `0.5` → `500m`), and a
 * client that compares what it wrote with what it reads must see the same strings here.
 */

/** The message apimachinery's `ErrFormatWrong` carries. */
export const QUANTITY_FORMAT_ERROR =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const SUFFIX_ERROR = "unable to parse quantity's suffix";
const NUMERIC_ERROR = 'unable to parse numeric part of quantity';

export class QuantityError extends Error {
  override readonly name = 'QuantityError';
}

type Format = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

const DECIMAL_SUFFIXES: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const DECIMAL_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const BINARY_SUFFIXES: Record<string, number> = {
  Ki: 10,
  Mi: 20,
  Gi: 30,
  Ti: 40,
  Pi: 50,
  Ei: 60,
};
const BINARY_BY_POWER = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const SUFFIX_CHARS = 'eEinumkKMGTP';
const MAX_INT64 = (1n << 63n) - 1n;

interface Parts {
  positive: boolean;
  num: string;
  denom: string;
  suffix: string;
}

function isDigit(ch: string | undefined): boolean {
  return ch !== undefined && ch >= '0' && ch <= '9';
}

/** apimachinery's `parseQuantityString`. */
function split(str: string): Parts {
  let positive = true;
  let pos = 0;
  const end = str.length;
  if (str[0] === '-') {
    positive = false;
    pos++;
  } else if (str[0] === '+') {
    pos++;
  }
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) return { positive, num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  let num = str.slice(pos, i);
  pos = i;
  if (num === '') num = '0';
  let denom = '';
  if (pos < end && str[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(str[i])) i++;
    denom = str.slice(pos, i);
    pos = i;
  }
  const suffixStart = pos;
  while (pos < end && SUFFIX_CHARS.includes(str[pos] ?? '')) pos++;
  if (pos < end && (str[pos] === '-' || str[pos] === '+')) pos++;
  while (pos < end && isDigit(str[pos])) pos++;
  if (pos < end) throw new QuantityError(QUANTITY_FORMAT_ERROR);
  return { positive, num, denom, suffix: str.slice(suffixStart) };
}

interface Amount {
  /** value = unscaled × 10^-scale */
  unscaled: bigint;
  scale: number;
  format: Format;
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

function parseAmount(str: string): Amount {
  if (str === '') throw new QuantityError(QUANTITY_FORMAT_ERROR);
  const { positive, num, denom, suffix } = split(str);
  let format: Format;
  let base: 10 | 2;
  let exponent: number;
  const dec = DECIMAL_SUFFIXES[suffix];
  const bin = BINARY_SUFFIXES[suffix];
  if (dec !== undefined) {
    format = 'DecimalSI';
    base = 10;
    exponent = dec;
  } else if (bin !== undefined) {
    format = 'BinarySI';
    base = 2;
    exponent = bin;
  } else if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const rest = suffix.slice(1);
    if (!/^[+-]?\d+$/.test(rest)) throw new QuantityError(SUFFIX_ERROR);
    format = 'DecimalExponent';
    base = 10;
    exponent = Number.parseInt(rest, 10);
  } else {
    throw new QuantityError(SUFFIX_ERROR);
  }
  const digits = num + denom;
  if (!/^\d+$/.test(digits)) throw new QuantityError(NUMERIC_ERROR);
  let unscaled = BigInt(digits);
  let scale = denom.length;
  if (base === 10) scale -= exponent;
  else unscaled *= 1n << BigInt(exponent);
  if (scale < 0) {
    unscaled *= pow10(-scale);
    scale = 0;
  }
  // Values below a nano are rounded up, away from zero, as apimachinery does.
  if (scale > 9) {
    const divisor = pow10(scale - 9);
    unscaled = (unscaled + divisor - 1n) / divisor;
    scale = 9;
  }
  if (format === 'BinarySI' && scale === 0 && unscaled > MAX_INT64) unscaled = MAX_INT64;
  if (unscaled === 0n && format === 'BinarySI') format = 'DecimalSI';
  return { unscaled: positive ? unscaled : -unscaled, scale, format };
}

function canonicalDecimal(unscaled: bigint, scale: number, format: Format): string {
  let mantissa = unscaled;
  let exponent = -scale;
  while (mantissa !== 0n && mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  const remainder = ((exponent % 3) + 3) % 3;
  if (remainder !== 0) {
    mantissa *= pow10(remainder);
    exponent -= remainder;
  }
  if (format === 'DecimalExponent') {
    return exponent === 0 ? mantissa.toString() : `${mantissa}e${exponent}`;
  }
  const suffix = DECIMAL_BY_EXPONENT.get(exponent);
  return suffix === undefined ? `${mantissa}e${exponent}` : `${mantissa}${suffix}`;
}

/**
 * Parses a quantity and returns its canonical string.
 * @throws QuantityError with apimachinery's message when the string is not a quantity.
 */
export function canonicalQuantity(input: string): string {
  if (input === '0') return '0';
  const { unscaled, scale, format } = parseAmount(input);
  if (unscaled === 0n) return '0';
  if (format === 'BinarySI') {
    const isInteger = scale === 0 || unscaled % pow10(scale) === 0n;
    const whole = scale === 0 ? unscaled : unscaled / pow10(scale);
    if (isInteger && (whole >= 1024n || whole <= -1024n)) {
      let mantissa = whole;
      let power = 0;
      while (power < 6 && mantissa % 1024n === 0n) {
        mantissa /= 1024n;
        power++;
      }
      return `${mantissa}${BINARY_BY_POWER[power] ?? ''}`;
    }
    return canonicalDecimal(unscaled, scale, 'DecimalSI');
  }
  return canonicalDecimal(unscaled, scale, format);
}
