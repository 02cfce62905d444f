import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isAdmissionErrorCode } from '@slicekeeper/admission';
import type { AdmissionErrorCode } from '@slicekeeper/admission';
import { SlicekeeperError } from '@slicekeeper/errors';
import { CorruptRecordError } from '@slicekeeper/state';
import { boundedText } from '../bounded-text';
import { HttpError } from '../http-error';
import type { FieldProblem } from '../http-error';
import type { ErrorBody } from '../schemas/error';
import { MAX_PARAM_LENGTH } from '../schemas/plugins';
import { RouteMethods } from './route-methods';

/**
 * The HTTP status of each admission failure. A refused endpoint is 403 (the request is
 * understood and not allowed); a plugin that is not acceptable is 422; a plugin that cannot be
 * reached or answers nothing in time is 502, the answer of a gateway whose upstream failed.
 */
const ADMISSION_STATUS: Record<AdmissionErrorCode, number> = {
  'invalid-endpoint': 400,
  'endpoint-forbidden': 403,
  'plugin-unreachable': 502,
  'plugin-timeout': 502,
  'plugin-error': 502,
  'wrong-plugin-type': 422,
  'invalid-driver-name': 422,
  'driver-mismatch': 422,
  'unsupported-versions': 422,
  'missing-plugin-info': 422,
};

/** Fastify's own client errors, renamed to the API's codes. */
const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body-too-large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid-request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid-json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid-json',
  FST_ERR_CTP_INVALID_TYPE: 'invalid-request',
};

/**
 * The router's refusals of a path parameter, answered as the schema would answer a bad one:
 * 400 with the problem, never fastify's message (it repeats the whole path).
 */
const ROUTER_PARAM_PROBLEMS: Record<string, { problem: string; message: string }> = {
  FST_ERR_MAX_PARAM_LENGTH: {
    problem: `a path parameter is longer than ${MAX_PARAM_LENGTH} characters`,
    message: `must be at most ${MAX_PARAM_LENGTH} characters`,
  },
  FST_ERR_BAD_URL: {
    problem: 'a path parameter is not valid percent-encoding',
    message: 'must be valid percent-encoding',
  },
};

/**
 * What ioredis (and BullMQ, with the same texts) reject a command with when Redis cannot be
 * reached: offline with the offline queue disabled, the connection ended, no reply within
 * `commandTimeout`, a reply lost with the connection.
 */
const REDIS_CONNECTION_ERRORS = new Set([
  "Stream isn't writeable and enableOfflineQueue options is false",
  // A Redis Cluster client between connections (starting, or refreshing its slots).
  "Cluster isn't ready and enableOfflineQueue options is false",
  'Connection is closed.',
  'Command timed out',
  'Command aborted due to connection close',
]);
/** Replies of a Redis that is up but cannot serve yet: loading, busy, a replica, failing over. */
const REDIS_NOT_SERVING = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN) /;
/** Socket errors of a connection attempt that reached no Redis. */
const NETWORK_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Whether `error` (or an error it wraps, through `cause`) means Redis is unavailable rather than
 * that the request or the code is wrong. The one place ioredis' failures are classified.
 */
export function isRedisUnavailable(error: unknown): boolean {
  let current = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current.name === 'MaxRetriesPerRequestError') return true;
    if (REDIS_CONNECTION_ERRORS.has(current.message)) return true;
    if (current.name === 'ReplyError' && REDIS_NOT_SERVING.test(current.message)) return true;
    const { code } = current as { code?: unknown };
    if (typeof code === 'string' && NETWORK_ERRORS.has(code)) return true;
    current = current.cause;
  }
  return false;
}

export interface ErrorAnswer {
  status: number;
  body: ErrorBody;
}

/** Maps anything thrown by a route, hook or fastify itself to the uniform error answer. */
export function toErrorAnswer(error: unknown): ErrorAnswer {
  if (error instanceof HttpError) {
    return answer(error.statusCode, error.code, error.message, error.details);
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const where = (error as { validationContext?: string }).validationContext ?? 'body';
    const details = error.validation.flatMap((issue): FieldProblem[] => {
      const path = issue.instancePath.split('/').filter((p) => p !== '');
      const field = [where, ...path].join('.');
      const keys = (issue.params as { keys?: unknown }).keys;
      if (issue.keyword === 'unrecognized_keys' && Array.isArray(keys)) {
        return keys.map((key) => ({ field: `${field}.${String(key)}`, message: 'unknown field' }));
      }
      return [{ field, message: issue.message ?? 'invalid' }];
    });
    // Field names can be the request's own JSON keys: bounded like every echoed text.
    const merged = mergeByField(details).map(({ field, message }) => ({
      field: boundedText(field, 200),
      message: boundedText(message),
    }));
    const fields = merged.map((d) => d.field).join(', ');
    return answer(400, 'invalid-request', boundedText(`invalid ${where}: ${fields}`), merged);
  }
  if (error instanceof SlicekeeperError && isAdmissionErrorCode(error.code)) {
    // Admission messages carry what the plugin said (its GetInfo error, type, name, versions).
    const status = ADMISSION_STATUS[error.code];
    const message = boundedText(error.message);
    const details = status === 400 ? [{ field: 'body.endpoint', message }] : [];
    return answer(status, error.code, message, details);
  }
  if (isRedisUnavailable(error)) {
    return answer(503, 'redis-unavailable', 'Redis is unavailable; retry later');
  }
  if (error instanceof CorruptRecordError) {
    // Says which record, so that an operator can look at it (or delete it); never its content.
    return answer(500, 'corrupt-record', boundedText(`corrupt ${error.record}`));
  }
  if (isFastifyClientError(error)) {
    const routerProblem = ROUTER_PARAM_PROBLEMS[error.code];
    if (routerProblem !== undefined) {
      return answer(400, 'invalid-request', `invalid params: ${routerProblem.problem}`, [
        { field: 'params', message: routerProblem.message },
      ]);
    }
    const message = boundedText(error.message);
    if (error.code === 'FST_ERR_VALIDATION') {
      // A validation error without zod issues (e.g. a non-object body before zod ran).
      return answer(400, 'invalid-request', message, [{ field: 'request', message }]);
    }
    const code =
      FASTIFY_CODES[error.code] ?? (error.statusCode === 404 ? 'not-found' : 'bad-request');
    const details = error.statusCode === 400 ? [{ field: 'request', message }] : [];
    return answer(error.statusCode, code, message, details);
  }
  return answer(500, 'internal', 'internal error');
}

/** The 405 answer to `method` on `path`, which answers only the `allowed` methods. */
export function methodNotAllowed(
  method: string,
  path: string,
  allowed: readonly string[],
): ErrorAnswer {
  return answer(
    405,
    'method-not-allowed',
    `${method} is not allowed on ${boundedText(path, 200)}; allowed: ${allowed.join(', ')}`,
  );
}

/** One entry per field, its problems joined, in the order fields first appear. */
function mergeByField(problems: readonly FieldProblem[]): FieldProblem[] {
  const byField = new Map<string, string[]>();
  for (const { field, message } of problems) {
    byField.set(field, [...(byField.get(field) ?? []), message]);
  }
  return [...byField].map(([field, messages]) => ({ field, message: messages.join('; ') }));
}

function answer(
  status: number,
  code: string,
  message: string,
  details: readonly FieldProblem[] = [],
): ErrorAnswer {
  return { status, body: { code, message, details: [...details] } };
}

function isFastifyClientError(error: unknown): error is FastifyError & { statusCode: number } {
  if (typeof error !== 'object' || error === null) return false;
  const { statusCode } = error as { statusCode?: unknown };
  return typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500;
}

function send(reply: FastifyReply, { status, body }: ErrorAnswer): FastifyReply {
  return reply.code(status).type('application/json').send(body);
}

/**
 * fastify's `frameworkErrors`: the router's refusals (a path parameter too long or badly
 * encoded) answered in the one shape instead of fastify's own body.
 */
export function answerFrameworkError(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
): void {
  void send(reply, toErrorAnswer(error));
}

/**
 * fastify's `clientErrorHandler`: a request Node's HTTP parser refused (malformed, headers too
 * large, too slow to arrive) never becomes a fastify request; it is answered here, on the
 * socket, in the one shape.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request-timeout', 'the request did not arrive in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers-too-large', 'the request headers are too large']
        : [400, 'bad-request', 'the request is not valid HTTP/1.1'];
  const details = status === 400 ? [{ field: 'request', message }] : [];
  const body = JSON.stringify({ code, message, details } satisfies ErrorBody);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * One JSON error shape everywhere (`{ code, message, details }`): route errors, fastify's own
 * (bad JSON, 413, 415), unknown routes (404), known paths asked with another method (405 with
 * `Allow`, which fastify does not do: the methods of every route are collected as they are
 * registered), and requests arriving while the API shuts down (503, instead of fastify's own
 * body). A 500 is logged with its cause and a 502 (a plugin failed) as a warning; a 503 is not
 * (a Redis outage is logged once, by the connection's outage log, not once per request), nor is
 * a 4xx, the client's business: both at debug only. Register before any route.
 */
export const errorHandler = fp(
  (app: FastifyInstance) => {
    const routes = new RouteMethods();
    app.addHook('onRoute', (route) => {
      routes.add(route.url, route.method);
    });

    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      done();
    });
    app.addHook('onRequest', (_request, _reply, done) => {
      if (closing) {
        done(new HttpError(503, 'shutting-down', 'the API is shutting down; retry'));
        return;
      }
      done();
    });

    app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
      const answered = toErrorAnswer(error);
      const { status, body } = answered;
      if (status === 502) request.log.warn({ code: body.code, err: body.message }, 'plugin failed');
      else if (status >= 500 && status !== 503) request.log.error({ err: error }, 'request failed');
      else request.log.debug({ code: body.code, status }, 'request refused');
      return send(reply, answered);
    });

    app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?', 1)[0] ?? '';
      const allowed = routes.allowed(path);
      if (allowed.length > 0 && !allowed.includes(request.method)) {
        return send(
          reply.header('allow', allowed.join(', ')),
          methodNotAllowed(request.method, path, allowed),
        );
      }
      return send(
        reply,
        answer(404, 'not-found', `no route ${request.method} ${boundedText(path, 200)}`),
      );
    });
    return Promise.resolve();
  },
  { name: 'error-handler' },
);
