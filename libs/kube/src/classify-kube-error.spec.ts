import { ApiException, FetchError } from '@kubernetes/client-node';
import { TerminalError, TransientError, isTerminal } from '@slicekeeper/errors';
import { classifyKubeError, parseRetryAfter } from './classify-kube-error';

const NOW = Date.parse('2025-06-01T12:00:00Z');
const clock = { now: () => NOW };

/** A Status body as kube-apiserver sends it. */
function status(code: number, reason: string, message: string, details: object = {}): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message,
    reason,
    details,
    code,
  });
}

/** What client-node 1.4 throws for a non-2xx answer: the body as text, lower-case headers. */
function apiException(
  code: number,
  body: string | undefined,
  headers: Record<string, string> = {},
) {
  return new ApiException<string | undefined>(code, 'Unknown API Status Code!', body, headers);
}

function systemError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, errno: code, syscall: 'connect' });
}

describe('classifyKubeError', () => {
  describe('HTTP statuses', () => {
    it.each([
      [400, 'BadRequest', 'terminal', 'bad-request'],
      [401, 'Unauthorized', 'transient', 'unauthorized'],
      [403, 'Forbidden', 'terminal', 'forbidden'],
      [404, 'NotFound', 'terminal', 'not-found'],
      [408, 'Timeout', 'transient', 'timeout'],
      [409, 'Conflict', 'transient', 'conflict'],
      [410, 'Expired', 'transient', 'expired'],
      [413, 'RequestEntityTooLarge', 'transient', 'unexpected-status'],
      [422, 'Invalid', 'terminal', 'invalid'],
      [429, 'TooManyRequests', 'transient', 'throttled'],
      [500, 'InternalError', 'transient', 'server-error'],
      [503, 'ServiceUnavailable', 'transient', 'server-error'],
      [504, 'Timeout', 'transient', 'server-error'],
    ] as const)('%i %s → %s %s', (code, reason, kind, errorCode) => {
      const error = classifyKubeError(
        apiException(code, status(code, reason, `the ${reason} message`)),
        'update ResourceSlice "x"',
      );
      expect(error.kind).toBe(kind);
      expect(isTerminal(error)).toBe(kind === 'terminal');
      expect(error).toBeInstanceOf(kind === 'terminal' ? TerminalError : TransientError);
      expect(error.code).toBe(errorCode);
      expect(error.message).toBe(`update ResourceSlice "x": ${errorCode}: the ${reason} message`);
    });

    it('says what conflicted, as the API server words it', () => {
      const message =
        'Operation cannot be fulfilled on resourceslices.resource.k8s.io "x": the object has been modified; please apply your changes to the latest version and try again';
      const error = classifyKubeError(
        apiException(409, status(409, 'Conflict', message)),
        'update ResourceSlice "x"',
      );
      expect(error.message).toBe(`update ResourceSlice "x": conflict: ${message}`);
    });

    it('names the invalid fields of a 422', () => {
      const body = status(
        422,
        'Invalid',
        'ResourceSlice.resource.k8s.io "x" is invalid: [spec.devices[0].name: Invalid value: "GPU_0"]',
        {
          name: 'x',
          causes: [
            {
              reason: 'FieldValueInvalid',
              message: 'Invalid value: "GPU_0"',
              field: 'spec.devices[0].name',
            },
            { reason: 'FieldValueTooLong', message: 'Too long', field: 'spec.pool.name' },
            { reason: 'FieldValueInvalid', message: 'again', field: 'spec.devices[0].name' },
          ],
        },
      );
      const error = classifyKubeError(
        apiException(422, body),
        'create ResourceSlice "00000-gpu.example.com-node-a-"',
      );
      expect(error).toBeInstanceOf(TerminalError);
      expect(error.code).toBe('invalid');
      expect(error.message).toBe(
        'create ResourceSlice "00000-gpu.example.com-node-a-": invalid: ResourceSlice.resource.k8s.io "x" is invalid: [spec.devices[0].name: Invalid value: "GPU_0"] (fields: spec.devices[0].name, spec.pool.name)',
      );
    });

    it('describes a 401 without a body and a 502 from a proxy that sent HTML', () => {
      expect(classifyKubeError(apiException(401, undefined), 'list ResourceSlices').message).toBe(
        'list ResourceSlices: unauthorized: HTTP 401 Unauthorized',
      );
      const proxied = classifyKubeError(
        apiException(502, '<html>\n<body>Bad Gateway</body></html>'),
        'list ResourceSlices',
      );
      expect(proxied.code).toBe('server-error');
      expect(proxied.message).toBe(
        'list ResourceSlices: server-error: HTTP 502: <html> <body>Bad Gateway</body></html>',
      );
    });

    it('keeps the ApiException as the cause', () => {
      const exception = apiException(500, status(500, 'InternalError', 'etcd is down'));
      expect(classifyKubeError(exception, 'ctx').cause).toBe(exception);
    });
  });

  describe('Retry-After', () => {
    function throttled(headers: Record<string, string>, details: object = {}) {
      const error = classifyKubeError(
        apiException(429, status(429, 'TooManyRequests', 'Too many requests', details), headers),
        'create ResourceSlice "a"',
        { clock },
      );
      expect(error).toBeInstanceOf(TransientError);
      expect(error.code).toBe('throttled');
      return (error as TransientError).retryAfterMs;
    }

    it.each([
      ['delay-seconds', { 'retry-after': '3' }, 3000],
      ['zero seconds', { 'retry-after': '0' }, 0],
      ['an HTTP date', { 'retry-after': 'Sun, 01 Jun 2025 12:00:05 GMT' }, 5000],
      ['an HTTP date in the past', { 'retry-after': 'Sun, 01 Jun 2025 11:59:00 GMT' }, 0],
      ['a header name in any case', { 'Retry-After': '2' }, 2000],
      ['no header', {}, undefined],
      ['an unreadable header', { 'retry-after': 'soon' }, undefined],
      ['fractional seconds (not allowed by RFC 9110)', { 'retry-after': '1.5' }, undefined],
    ])('reads %s', (_name, headers, expected) => {
      expect(throttled(headers)).toBe(expected);
    });

    it("falls back to the Status' retryAfterSeconds", () => {
      expect(throttled({}, { retryAfterSeconds: 4 })).toBe(4000);
      expect(throttled({ 'retry-after': '1' }, { retryAfterSeconds: 4 })).toBe(1000);
    });

    it('honours Retry-After on a 503 too', () => {
      const error = classifyKubeError(
        apiException(503, status(503, 'ServiceUnavailable', 'apiserver is shutting down'), {
          'retry-after': '7',
        }),
        'ctx',
      );
      expect(error.code).toBe('server-error');
      expect((error as TransientError).retryAfterMs).toBe(7000);
    });

    it('parses both forms on its own', () => {
      expect(parseRetryAfter(' 12 ', NOW)).toBe(12_000);
      expect(parseRetryAfter('Sun, 01 Jun 2025 12:01:00 GMT', NOW)).toBe(60_000);
      expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
      expect(parseRetryAfter('2025-06-01T12:01:00Z', NOW)).toBeUndefined();
    });
  });

  describe('network failures', () => {
    it.each([
      ['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:6443'],
      ['ECONNRESET', 'read ECONNRESET'],
      ['ENOTFOUND', 'getaddrinfo ENOTFOUND kubernetes.default.svc'],
      ['EAI_AGAIN', 'getaddrinfo EAI_AGAIN kubernetes.default.svc'],
      ['EHOSTUNREACH', 'connect EHOSTUNREACH 10.0.0.1:443'],
      ['EPIPE', 'write EPIPE'],
    ])('%s is a transient connection error', (code, message) => {
      const fetchError = new FetchError(
        `request to https://10.0.0.1/api failed, reason: ${message}`,
        'system',
        systemError(code, message),
      );
      const error = classifyKubeError(fetchError, 'list ResourceSlices');
      expect(error).toBeInstanceOf(TransientError);
      expect(error.code).toBe('connection');
      expect(error.message).toBe(
        `list ResourceSlices: connection: request to https://10.0.0.1/api failed, reason: ${message}`,
      );
    });

    it('recognises a socket hang up, a bare system error and a TLS failure', () => {
      expect(classifyKubeError(new Error('socket hang up'), 'ctx').code).toBe('connection');
      expect(
        classifyKubeError(systemError('ECONNREFUSED', 'connect ECONNREFUSED'), 'ctx').code,
      ).toBe('connection');
      const tls = new FetchError(
        'request failed, reason: self-signed certificate',
        'system',
        systemError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate'),
      );
      expect(classifyKubeError(tls, 'ctx').code).toBe('connection');
    });

    it('finds a network failure in the cause chain (undici)', () => {
      const failed = new TypeError('fetch failed', {
        cause: systemError('ECONNRESET', 'read ECONNRESET'),
      });
      expect(classifyKubeError(failed, 'ctx').code).toBe('connection');
    });

    it.each([
      [
        'an aborted request (our per-request timeout)',
        Object.assign(new Error('The user aborted a request.'), {
          name: 'AbortError',
          type: 'aborted',
        }),
      ],
      ['a TimeoutError', new DOMException('no complete response within 100 ms', 'TimeoutError')],
      ['ETIMEDOUT', systemError('ETIMEDOUT', 'connect ETIMEDOUT 10.0.0.1:443')],
      [
        "node-fetch's own timeout",
        new FetchError('network timeout at: https://x', 'request-timeout'),
      ],
      [
        'undici headers timeout',
        new TypeError('fetch failed', {
          cause: systemError('UND_ERR_HEADERS_TIMEOUT', 'Headers Timeout Error'),
        }),
      ],
    ])('%s is a transient timeout', (_name, cause) => {
      const error = classifyKubeError(cause, 'get Node "n"');
      expect(error).toBeInstanceOf(TransientError);
      expect(error.code).toBe('timeout');
      expect(error.message).toMatch(/^get Node "n": timeout: /);
    });
  });

  describe('anything else', () => {
    it.each([
      ['an Error', new Error('boom'), 'ctx: boom'],
      ['a string', 'boom', 'ctx: boom'],
      ['a plain object', { code: 'weird' }, 'ctx: {"code":"weird"}'],
      [
        'an object with a non-HTTP numeric code',
        { code: 7, body: '', headers: {} },
        'ctx: {"code":7,"body":"","headers":{}}',
      ],
      ['undefined', undefined, 'ctx: undefined'],
    ])('%s is transient (retried, never dropped)', (_name, thrown, message) => {
      const error = classifyKubeError(thrown, 'ctx');
      expect(error).toBeInstanceOf(TransientError);
      expect(error.code).toBe('error');
      expect(error.message).toBe(message);
    });

    it('passes slicekeeper errors through with the context added', () => {
      const inner = new TransientError('throttled: slow down', {
        code: 'throttled',
        retryAfterMs: 1500,
      });
      const error = classifyKubeError(inner, 'update ResourceSlice "x"');
      expect(error).toBeInstanceOf(TransientError);
      expect(error.message).toBe('update ResourceSlice "x": throttled: slow down');
      expect((error as TransientError).retryAfterMs).toBe(1500);
      expect(
        classifyKubeError(new TerminalError('nope', { code: 'invalid' }), 'ctx'),
      ).toBeInstanceOf(TerminalError);
    });
  });
});
