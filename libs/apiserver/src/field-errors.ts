/**
 * Field validation errors shaped like apimachinery's `field.Error`: the same type names, path
 * syntax (`spec.devices[0].attributes[model].string`) and message bodies, so that the Status
 * bodies built from them match kube-apiserver's byte for byte.
 */

/** The `reason` a field error carries into a Status cause (apimachinery `field.ErrorType`). */
export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueDuplicate'
  | 'FieldValueNotFound'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError'
  | 'FieldValueTypeInvalid';

const TYPE_TEXT: Record<FieldErrorType, string> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueNotFound: 'Not found',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
  FieldValueTypeInvalid: 'Invalid value',
};

/** Marks a field error whose value is not printed (as apimachinery's `omitValue`). */
export const OMIT_VALUE: unique symbol = Symbol('omit-value');

/** One validation failure at one field path. */
export interface FieldError {
  readonly type: FieldErrorType;
  readonly field: string;
  readonly badValue: unknown;
  readonly detail: string;
}

/** A path into an object, rendered as apimachinery's `field.Path.String()`. */
export class FieldPath {
  private constructor(private readonly text: string) {}

  static root(name: string): FieldPath {
    return new FieldPath(name);
  }

  child(...names: string[]): FieldPath {
    let text = this.text;
    for (const name of names) text = text === '' ? name : `${text}.${name}`;
    return new FieldPath(text);
  }

  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }

  key(k: string): FieldPath {
    return new FieldPath(`${this.text}[${k}]`);
  }

  toString(): string {
    return this.text;
  }
}

/** Go's `strconv.Quote`, which `%q` uses: escapes quotes, backslashes and non-printables. */
export function goQuote(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * A bad value already printed as Go prints it (`%#v` of a struct, a time's `String()`), for the
 * values apimachinery does not print as JSON.
 */
export class GoValue {
  constructor(readonly text: string) {}
}

/** Formats a bad value as apimachinery's `ErrorBody` does for the types this server uses. */
function formatValue(value: unknown): string {
  if (value instanceof GoValue) return value.text;
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return goQuote(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** The message body of a field error, without its path: `Invalid value: "x": detail`. */
export function errorBody(error: FieldError): string {
  const typeText = TYPE_TEXT[error.type];
  let text: string;
  if (
    error.type === 'FieldValueRequired' ||
    error.type === 'FieldValueForbidden' ||
    error.type === 'FieldValueTooLong' ||
    error.type === 'InternalError' ||
    error.badValue === OMIT_VALUE
  ) {
    text = typeText;
  } else {
    text = `${typeText}: ${formatValue(error.badValue)}`;
  }
  return error.detail === '' ? text : `${text}: ${error.detail}`;
}

/** The full error string: `spec.driver: Invalid value: "x": detail`. */
export function errorString(error: FieldError): string {
  return error.field === '' ? errorBody(error) : `${error.field}: ${errorBody(error)}`;
}

function make(
  type: FieldErrorType,
  path: FieldPath,
  badValue: unknown,
  detail: string,
): FieldError {
  return { type, field: path.toString(), badValue, detail };
}

/** Constructors mirroring apimachinery's `field.Required`, `field.Invalid`, …. */
export const fieldError = {
  required: (path: FieldPath, detail = '') => make('FieldValueRequired', path, '', detail),
  invalid: (path: FieldPath, value: unknown, detail: string) =>
    make('FieldValueInvalid', path, value, detail),
  duplicate: (path: FieldPath, value: unknown) => make('FieldValueDuplicate', path, value, ''),
  notFound: (path: FieldPath, value: unknown) => make('FieldValueNotFound', path, value, ''),
  notSupported: (path: FieldPath, value: unknown, supported: readonly string[]) =>
    make(
      'FieldValueNotSupported',
      path,
      value,
      supported.length === 0
        ? ''
        : `supported values: ${supported.map((s) => goQuote(s)).join(', ')}`,
    ),
  forbidden: (path: FieldPath, detail: string) => make('FieldValueForbidden', path, '', detail),
  tooLong: (path: FieldPath, maxLength: number) =>
    make('FieldValueTooLong', path, OMIT_VALUE, `may not be more than ${maxLength} bytes`),
  tooMany: (path: FieldPath, actual: number, max: number) =>
    make(
      'FieldValueTooMany',
      path,
      actual,
      `must have at most ${max} ${max === 1 ? 'item' : 'items'}`,
    ),
};

/** apimachinery's `ErrorList.ToAggregate().Error()`: duplicates dropped, several in brackets. */
export function aggregateMessage(errors: readonly FieldError[]): string {
  const seen = new Set<string>();
  for (const error of errors) seen.add(errorString(error));
  const messages = [...seen];
  return messages.length === 1 ? (messages[0] ?? '') : `[${messages.join(', ')}]`;
}
