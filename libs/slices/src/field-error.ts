import { TerminalError, listProblems } from '@slicekeeper/errors';

/**
 * Validation problems in the shape of the API server's `field.Error`
 * (k8s.io/apimachinery/pkg/util/validation/field), so that a driver author reads the same
 * sentence from slicekeeper as from `kubectl apply`, with a path into the driver's own data.
 */

/** The API server's error types, as printed (`field.ErrorType.String()`). */
export type FieldErrorType =
  | 'Invalid value'
  | 'Required value'
  | 'Duplicate value'
  | 'Unsupported value'
  | 'Forbidden'
  | 'Too long'
  | 'Too many'
  | 'Not found';

export interface FieldError {
  /** Kubernetes-style path: `pools[0].devices[3].attributes[model].string`. */
  readonly path: string;
  readonly type: FieldErrorType;
  /** Why, in the API server's words where it has some; may be empty. */
  readonly message: string;
  /** The offending value, printed after the type (omitted for Required, Forbidden, Too long). */
  readonly value?: unknown;
}

/** Types whose printed form leaves out the value, as `field.Error.ErrorBody` does. */
const VALUELESS_TYPES: ReadonlySet<FieldErrorType> = new Set([
  'Required value',
  'Forbidden',
  'Too long',
]);

/**
 * One error as the API server prints it: `path: Type: value: message`, with strings quoted
 * (`Invalid value: "GPU_0": a lowercase RFC 1123 label must ...`).
 */
export function formatFieldError(error: FieldError): string {
  let body: string = error.type;
  if (!VALUELESS_TYPES.has(error.type) && error.value !== undefined) {
    body += `: ${formatValue(error.value)}`;
  }
  if (error.message !== '') body += `: ${error.message}`;
  return `${error.path}: ${body}`;
}

/** `path[key]`, with a long key shortened in the middle as the API server does. */
export function keyPath(path: string, key: string, maxKeyLength: number): string {
  const max = Math.max(maxKeyLength, 16);
  if (key.length <= max) return `${path}[${key}]`;
  const remaining = max - 3;
  const head = key.slice(0, Math.ceil(remaining / 2));
  const tail = key.slice(key.length - Math.floor(remaining / 2));
  return `${path}[${head}...${tail}]`;
}

/** `field.TooMany`: a list or map with more than `max` entries. */
export function tooMany(path: string, count: number, max: number): FieldError {
  return { path, type: 'Too many', value: count, message: `must have at most ${max} items` };
}

/** `field.TooLong`: a value over `max` bytes (the value is not repeated). */
export function tooLong(path: string, max: number): FieldError {
  return { path, type: 'Too long', message: `may not be more than ${max} bytes` };
}

/** `field.Required`: a value that must be set. */
export function required(path: string, message = ''): FieldError {
  return { path, type: 'Required value', message };
}

/** `field.Invalid`: a malformed value. */
export function invalid(path: string, value: unknown, message: string): FieldError {
  return { path, type: 'Invalid value', value, message };
}

/**
 * A terminal error for invalid driver data. Its message lists the first problems only (see
 * `listProblems`), as it is stored in the key's status, returned by the API and logged;
 * `fieldErrors` keeps every one.
 */
/** The bounded text of a list of field errors: `invalid driver resources: a: …; b: …`. */
export function describeFieldErrors(
  fieldErrors: readonly FieldError[],
  context = 'invalid driver resources',
): string {
  return `${context}: ${listProblems(fieldErrors.map(formatFieldError))}`;
}

export class InvalidDriverResourcesError extends TerminalError {
  readonly fieldErrors: readonly FieldError[];

  constructor(fieldErrors: readonly FieldError[], context = 'invalid driver resources') {
    super(describeFieldErrors(fieldErrors, context), { code: 'invalid' });
    this.fieldErrors = fieldErrors;
  }
}

export interface ToTerminalErrorOptions {
  /** Put in front of the list. @defaultValue `'invalid driver resources'` */
  context?: string;
}

/**
 * The terminal error (code `invalid`) for a non-empty list of field errors, or undefined for an
 * empty one: the caller records it and does not retry until the driver sends something new.
 */
export function toTerminalError(
  errors: readonly FieldError[],
  options: ToTerminalErrorOptions = {},
): InvalidDriverResourcesError | undefined {
  if (errors.length === 0) return undefined;
  return new InvalidDriverResourcesError(errors, options.context);
}

function formatValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value);
    case 'object':
      return JSON.stringify(value); // null prints as null, like Go's nil
    default:
      return `<${typeof value}>`;
  }
}
