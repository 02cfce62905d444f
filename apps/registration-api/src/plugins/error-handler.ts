import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isAdmissionErrorCode } from '@slicekeeper/admission';
import type { AdmissionErrorCode } from '@slicekeeper/admission';
import { SlicekeeperError } from '@slicekeeper/errors';
import { HttpError } from '../http-error';
import type { FieldProblem } from '../http-error';
import type { ErrorBody } from '../schemas/error';

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

interface Answer {
  status: number;
  body: ErrorBody;
}

/** Maps anything thrown by a route, hook or fastify itself to the uniform error answer. */
export function toErrorAnswer(error: unknown): Answer {
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
    const merged = mergeByField(details);
    const fields = merged.map((d) => d.field).join(', ');
    return answer(400, 'invalid-request', `invalid ${where}: ${fields}`, merged);
  }
  if (error instanceof SlicekeeperError && isAdmissionErrorCode(error.code)) {
    const status = ADMISSION_STATUS[error.code];
    const details = status === 400 ? [{ field: 'body.endpoint', message: error.message }] : [];
    return answer(status, error.code, error.message, details);
  }
  if (isFastifyClientError(error)) {
    if (error.code === 'FST_ERR_VALIDATION') {
      // A validation error without zod issues (e.g. a non-object body before zod ran).
      return answer(400, 'invalid-request', error.message, [
        { field: 'request', message: error.message },
      ]);
    }
    const code =
      FASTIFY_CODES[error.code] ?? (error.statusCode === 404 ? 'not-found' : 'bad-request');
    return answer(error.statusCode, code, error.message);
  }
  return answer(500, 'internal', 'internal error');
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
): Answer {
  return { status, body: { code, message, details: [...details] } };
}

function isFastifyClientError(error: unknown): error is FastifyError & { statusCode: number } {
  if (typeof error !== 'object' || error === null) return false;
  const { statusCode } = error as { statusCode?: unknown };
  return typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500;
}

/**
 * One JSON error shape everywhere (`{ code, message, details }`), for route errors, fastify's
 * own (bad JSON, 413, 415) and unknown routes. A 5xx is logged with its cause; a 4xx is the
 * client's business and logged at debug only.
 */
export const errorHandler = fp(
  (app: FastifyInstance) => {
    app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
      const { status, body } = toErrorAnswer(error);
      if (status >= 500 && status !== 502) request.log.error({ err: error }, 'request failed');
      else if (status === 502)
        request.log.warn({ code: body.code, err: body.message }, 'plugin failed');
      else request.log.debug({ code: body.code, status }, 'request refused');
      return reply.code(status).type('application/json').send(body);
    });
    app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
      const body: ErrorBody = {
        code: 'not-found',
        message: `no route ${request.method} ${(request.url.split('?')[0] ?? '').slice(0, 200)}`,
        details: [],
      };
      return reply.code(404).type('application/json').send(body);
    });
    return Promise.resolve();
  },
  { name: 'error-handler' },
);
