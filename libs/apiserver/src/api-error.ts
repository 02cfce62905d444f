import { aggregateMessage, errorBody } from './field-errors';
import type { FieldError } from './field-errors';

/** A `metav1.StatusCause`, in the server's key order. */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** A `metav1.StatusDetails`, in the server's key order. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** A `metav1.Status` body. */
export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: { continue?: string };
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** A group and resource (or kind), rendered as `resource.group`, `resource` for the core group. */
export interface GroupName {
  readonly group: string;
  readonly name: string;
}

export function qualified(gr: GroupName): string {
  return gr.group === '' ? gr.name : `${gr.name}.${gr.group}`;
}

/**
 * An error the API answers with a Status body. Every failure a client can see is one of these, so
 * the HTTP layer never guesses a status code.
 */
export class ApiError extends Error {
  readonly code: number;
  readonly body: StatusBody;
  /** Seconds for the Retry-After header, when the status carries one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.retryAfterSeconds = details?.retryAfterSeconds;
    this.body = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      ...(message === '' ? {} : { message }),
      ...(reason === '' ? {} : { reason }),
      ...(details === undefined ? {} : { details }),
      code,
    };
  }
}

function details(gr: GroupName, name: string): StatusDetails {
  return {
    ...(name === '' ? {} : { name }),
    ...(gr.group === '' ? {} : { group: gr.group }),
    kind: gr.name,
  };
}

/** Factories for the Status errors of apimachinery's `k8s.io/apimachinery/pkg/api/errors`. */
export const apiErrors = {
  notFound: (gr: GroupName, name: string) =>
    new ApiError(404, 'NotFound', `${qualified(gr)} "${name}" not found`, details(gr, name)),

  alreadyExists: (gr: GroupName, name: string) =>
    new ApiError(
      409,
      'AlreadyExists',
      `${qualified(gr)} "${name}" already exists`,
      details(gr, name),
    ),

  conflict: (gr: GroupName, name: string, reason: string) =>
    new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${reason}`,
      details(gr, name),
    ),

  invalid: (gk: GroupName, name: string, errors: readonly FieldError[]) => {
    const causes = errors.map((e) => ({
      reason: e.type,
      message: errorBody(e),
      ...(e.field === '' ? {} : { field: e.field }),
    }));
    const message =
      errors.length === 0
        ? `${qualified(gk)} "${name}" is invalid`
        : `${qualified(gk)} "${name}" is invalid: ${aggregateMessage(errors)}`;
    return new ApiError(422, 'Invalid', message, { ...details(gk, name), causes });
  },

  badRequest: (message: string) => new ApiError(400, 'BadRequest', message),

  forbidden: (gr: GroupName, name: string, reason: string) =>
    new ApiError(
      403,
      'Forbidden',
      name === ''
        ? `${qualified(gr)} is forbidden: ${reason}`
        : `${qualified(gr)} "${name}" is forbidden: ${reason}`,
      details(gr, name),
    ),

  /** Forbidden on a path that is not a resource (`/api` for an anonymous user). */
  forbiddenPath: (message: string) => new ApiError(403, 'Forbidden', message, {}),

  unauthorized: () => new ApiError(401, 'Unauthorized', 'Unauthorized'),

  expired: (message: string) => new ApiError(410, 'Expired', message),

  gone: (message: string) => new ApiError(410, 'Gone', message),

  methodNotAllowed: () =>
    new ApiError(
      405,
      'MethodNotAllowed',
      'the server does not allow this method on the requested resource',
      {},
    ),

  pathNotFound: () =>
    new ApiError(404, 'NotFound', 'the server could not find the requested resource', {}),

  unsupportedMediaType: (accepted: readonly string[]) =>
    new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
    ),

  notAcceptable: (accepted: readonly string[]) =>
    new ApiError(
      406,
      'NotAcceptable',
      `only the following media types are accepted: ${accepted.join(', ')}`,
    ),

  internal: (message: string) =>
    new ApiError(500, 'InternalError', `Internal error occurred: ${message}`, {
      causes: [{ message }],
    }),

  /** An error that is not a Status on the real server either (reason `Unknown` is omitted). */
  unknown: (code: number, message: string) => new ApiError(code, '', message),

  /** apimachinery's `NewTimeoutError` for a resourceVersion ahead of the server's. */
  tooLargeResourceVersion: (requested: number, current: number) =>
    new ApiError(
      504,
      'Timeout',
      `Timeout: Too large resource version: ${requested}, current: ${current}`,
      {
        causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        retryAfterSeconds: 1,
      },
    ),

  /** A failure injected through the test hooks, shaped as the real server's Status for the code. */
  injected: (code: number, message: string | undefined, retryAfterSeconds: number | undefined) => {
    const reason = REASON_BY_CODE[code] ?? 'InternalError';
    const text = message ?? DEFAULT_MESSAGE_BY_CODE[code] ?? `injected failure (${code})`;
    return new ApiError(
      code,
      reason,
      text,
      retryAfterSeconds === undefined ? undefined : { retryAfterSeconds },
    );
  },
};

const REASON_BY_CODE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

const DEFAULT_MESSAGE_BY_CODE: Record<number, string> = {
  429: 'Too many requests, please try again later.',
  500: 'Internal error occurred: injected failure',
  503: 'The server is currently unable to handle the request',
  504: 'The server was unable to return a response in the time allotted, but may still be processing the request',
};
