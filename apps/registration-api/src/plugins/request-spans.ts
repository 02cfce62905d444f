import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  ATTR_HTTP_REQUEST_METHOD_ORIGINAL,
  ATTR_URL_PATH,
  ATTR_URL_QUERY,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  SpanKind,
  SpanStatusCode,
  parseTraceparent,
} from '@slicekeeper/telemetry';
import type { Span, Tracing } from '@slicekeeper/telemetry';
import { failSpanBounded } from '../span-failure';

export interface RequestSpansOptions {
  tracing: Tracing;
  /**
   * Routes that get no span: the probes kubelet and Prometheus call every few seconds, which
   * would fill the traces with requests nobody asks about.
   */
  untracedRoutes: readonly string[];
}

/** The methods HTTP's semantic conventions name; any other is `_OTHER`. */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'TRACE',
]);

/**
 * A SERVER span per request, as OpenTelemetry's HTTP server conventions name it: `{method}
 * {route}` (`{method}` alone when no route matched), its status ERROR for a 5xx answer or a
 * request the client abandoned only (a 4xx is the caller's mistake, not the server's), the child
 * of the caller's W3C `traceparent` when it sends one. The request's work — hooks, handler,
 * Redis, the probe dial, the enqueue — runs with the span active, so its spans are children and
 * its log lines carry the trace id.
 *
 * Hooks of our own rather than `@fastify/otel` (0.21.2, read before deciding): that plugin names
 * every span `request`, sets ERROR on any thrown error including our 404s and 409s, adds an
 * INTERNAL span per hook, takes its tracer from the global provider rather than the service's
 * `Tracing`, and brings `@opentelemetry/instrumentation` (require-in-the-middle,
 * import-in-the-middle) and a second `@opentelemetry/core` (it wants ^2, the tree has 3).
 */
export const requestSpans = fp(
  (app: FastifyInstance, options: RequestSpansOptions, done: (error?: Error) => void) => {
    const { tracing } = options;
    const untraced = new Set(options.untracedRoutes);
    const spans = new WeakMap<FastifyRequest, RequestSpan>();

    app.addHook('onRequest', (request, _reply, next) => {
      const route = request.routeOptions.url;
      if (route !== undefined && untraced.has(route)) {
        next();
        return;
      }
      const span = startRequestSpan(tracing, request);
      spans.set(request, { span });
      // Every later hook and the handler are called from here (the body's reading too), so they
      // run with the span active.
      void tracing.within(span, () => {
        next();
        return Promise.resolve();
      });
    });
    app.addHook('onError', (request, _reply, error, next) => {
      const traced = spans.get(request);
      if (traced !== undefined) traced.error = error;
      next();
    });
    app.addHook('onResponse', (request, reply, next) => {
      const traced = spans.get(request);
      if (traced !== undefined) {
        spans.delete(request);
        endRequestSpan(traced, reply);
      }
      next();
    });
    app.addHook('onRequestAbort', (request, next) => {
      const traced = spans.get(request);
      if (traced !== undefined) {
        spans.delete(request);
        traced.span.setAttribute(ATTR_ERROR_TYPE, 'aborted');
        traced.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client went away' });
        traced.span.end();
      }
      next();
    });
    done();
  },
  { name: 'request-spans' },
);

interface RequestSpan {
  readonly span: Span;
  /** What the handler or a hook threw, when it did. */
  error?: Error;
}

function startRequestSpan(tracing: Tracing, request: FastifyRequest): Span {
  const route = request.routeOptions.url;
  const known = KNOWN_METHODS.has(request.method);
  const method = known ? request.method : '_OTHER';
  const at = request.url.indexOf('?');
  const traceparent = request.headers.traceparent;
  const parent = typeof traceparent === 'string' ? parseTraceparent(traceparent) : undefined;
  return tracing.start(route === undefined ? method : `${method} ${route}`, {
    kind: SpanKind.SERVER,
    ...(parent === undefined ? {} : { parent }),
    attributes: {
      [ATTR_HTTP_REQUEST_METHOD]: method,
      ...(known ? {} : { [ATTR_HTTP_REQUEST_METHOD_ORIGINAL]: request.method }),
      ...(route === undefined ? {} : { [ATTR_HTTP_ROUTE]: route }),
      [ATTR_URL_SCHEME]: request.protocol,
      [ATTR_URL_PATH]: at < 0 ? request.url : request.url.slice(0, at),
      ...(at < 0 ? {} : { [ATTR_URL_QUERY]: request.url.slice(at + 1) }),
      [ATTR_SERVER_ADDRESS]: request.hostname,
      ...(request.port === null ? {} : { [ATTR_SERVER_PORT]: request.port }),
    },
  });
}

function endRequestSpan({ span, error }: RequestSpan, reply: FastifyReply): void {
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode);
  if (reply.statusCode >= 500) {
    // The conventions' error.type of a 5xx answer is its status code.
    const errorType = String(reply.statusCode);
    if (error === undefined) {
      span.setAttribute(ATTR_ERROR_TYPE, errorType);
      span.setStatus({ code: SpanStatusCode.ERROR });
    } else {
      failSpanBounded(span, error, errorType);
    }
  }
  span.end();
}
