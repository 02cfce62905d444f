import { constants as http2 } from 'node:http2';
import type { ServerHttp2Stream } from 'node:http2';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { gzipSync } from 'node:zlib';
import { status } from '@grpc/grpc-js';
import { waitFor } from '@slicekeeper/testing';
import { GrpcCall } from './grpc-http2';
import { GrpcSessionPool } from './grpc-session';
import type { GrpcCallStatus } from './grpc-status';
import { GRPC_HEADERS, OK_TRAILERS, framed, rawServer, startCall } from './testing/raw-grpc-server';

type Script = (stream: ServerHttp2Stream) => void;

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Answers with gRPC headers and a message, then resets the stream with `code`. */
function resetAfterMessage(code: number): Script {
  return (stream) => {
    // Waiting for trailers keeps `close` from ending the stream (END_STREAM) before its reset.
    stream.respond(GRPC_HEADERS, { waitForTrailers: true });
    stream.write(framed(Buffer.from('x')), () => {
      stream.close(code);
    });
  };
}

describe('GrpcCall', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function serve(script: Script) {
    const server = await rawServer(script);
    closers.push(server.close);
    return server;
  }

  async function ending(script: Script): Promise<GrpcCallStatus> {
    const server = await serve(script);
    return startCall(new GrpcSessionPool(), server.target).ended;
  }

  it('sends a gRPC request and deframes messages split across and packed into DATA frames', async () => {
    const one = framed(Buffer.from('one'));
    const two = framed(Buffer.from('two'));
    const three = framed(Buffer.alloc(3000, 7));
    const server = await serve((stream) => {
      stream.respond(GRPC_HEADERS, { waitForTrailers: true });
      stream.write(Buffer.concat([one, two, three.subarray(0, 2)]));
      stream.write(three.subarray(2, 1000));
      stream.write(Buffer.concat([three.subarray(1000), framed(Buffer.alloc(0))]));
      stream.on('wantTrailers', () => {
        stream.sendTrailers(OK_TRAILERS);
      });
      stream.end();
    });
    const { messages, ended } = startCall(new GrpcSessionPool(), server.target, {
      maxMessageBytes: 4096,
    });

    expect(await ended).toEqual({ code: status.OK, details: '' });
    expect(messages).toEqual([
      Buffer.from('one'),
      Buffer.from('two'),
      Buffer.alloc(3000, 7),
      Buffer.alloc(0),
    ]);
    expect(server.calls[0]?.headers).toMatchObject({
      ':method': 'POST',
      ':path': '/test.Service/Method',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    expect(server.calls[0]?.headers['grpc-timeout']).toBeUndefined();
  });

  describe('statuses', () => {
    it.each<[string, Script, GrpcCallStatus]>([
      [
        'trailers-only-status',
        (stream) => {
          stream.respond(
            { ...GRPC_HEADERS, 'grpc-status': '12', 'grpc-message': 'unknown%20method%3A%20x' },
            { endStream: true },
          );
        },
        { code: status.UNIMPLEMENTED, details: 'unknown method: x' },
      ],
      [
        'status-in-trailers',
        (stream) => {
          stream.respond(GRPC_HEADERS, { waitForTrailers: true });
          stream.on('wantTrailers', () => {
            stream.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'driver failure' });
          });
          stream.end(framed(Buffer.from('x')));
        },
        { code: status.UNAVAILABLE, details: 'driver failure' },
      ],
      [
        'status-gRPC-does-not-define',
        (stream) => {
          stream.respond({ ...GRPC_HEADERS, 'grpc-status': '99' }, { endStream: true });
        },
        { code: status.UNKNOWN, details: '' },
      ],
      [
        'malformed-status',
        (stream) => {
          stream.respond({ ...GRPC_HEADERS, 'grpc-status': 'ok' }, { endStream: true });
        },
        { code: status.INTERNAL, details: 'malformed grpc-status "ok"' },
      ],
      [
        'ended-without-status',
        (stream) => {
          stream.respond(GRPC_HEADERS);
          stream.end();
        },
        { code: status.INTERNAL, details: 'the stream ended without a gRPC status' },
      ],
      [
        'content-type-with-subtype-and-parameters',
        (stream) => {
          stream.respond(
            {
              ':status': 200,
              'content-type': 'application/grpc+proto; charset=utf-8',
              'grpc-status': '0',
            },
            { endStream: true },
          );
        },
        { code: status.OK, details: '' },
      ],
    ])('%s', async (_, script, expected) => {
      expect(await ending(script)).toEqual(expected);
    });
  });

  // A response that is not gRPC (an error page, a proxy): the gRPC HTTP-to-status table.
  describe('responses that are not gRPC', () => {
    it.each<[string, Script, GrpcCallStatus]>([
      [
        'html-page',
        (stream) => {
          stream.respond({ ':status': 200, 'content-type': 'text/html' });
          stream.end('<html>hello</html>');
        },
        {
          code: status.UNKNOWN,
          details: 'not a gRPC response: HTTP status 200, content-type "text/html"',
        },
      ],
      [
        'http-503-html',
        (stream) => {
          stream.respond({ ':status': 503, 'content-type': 'text/html' });
          stream.end('<html>busy</html>');
        },
        {
          code: status.UNAVAILABLE,
          details: 'not a gRPC response: HTTP status 503, content-type "text/html"',
        },
      ],
      [
        'no-content-type',
        (stream) => {
          stream.respond({ ':status': 200 });
          stream.end(framed(Buffer.from('x')));
        },
        { code: status.UNKNOWN, details: 'not a gRPC response: HTTP status 200, no content-type' },
      ],
      [
        'another-grpc-subtype',
        (stream) => {
          stream.respond({ ':status': 200, 'content-type': 'application/grpc+json' });
          stream.end('{}');
        },
        {
          code: status.UNKNOWN,
          details: 'not a gRPC response: HTTP status 200, content-type "application/grpc+json"',
        },
      ],
      [
        'http-404-grpc-without-status',
        (stream) => {
          stream.respond({ ...GRPC_HEADERS, ':status': 404 }, { endStream: true });
        },
        { code: status.UNIMPLEMENTED, details: 'HTTP status 404 without a gRPC status' },
      ],
      [
        'http-429',
        (stream) => {
          stream.respond({ ':status': 429, 'content-type': 'text/plain' }, { endStream: true });
        },
        {
          code: status.UNAVAILABLE,
          details: 'not a gRPC response: HTTP status 429, content-type "text/plain"',
        },
      ],
      [
        'http-401',
        (stream) => {
          stream.respond({ ':status': 401, 'content-type': 'text/plain' }, { endStream: true });
        },
        {
          code: status.UNAUTHENTICATED,
          details: 'not a gRPC response: HTTP status 401, content-type "text/plain"',
        },
      ],
    ])('%s', async (_, script, expected) => {
      expect(await ending(script)).toEqual(expected);
    });

    it('resets the stream of a response it refused, reading no body', async () => {
      const server = await serve((stream) => {
        stream.respond({ ':status': 503, 'content-type': 'text/html' });
        stream.write('<html>busy</html>');
      });
      const { ended, messages } = startCall(new GrpcSessionPool(), server.target);
      expect((await ended).code).toBe(status.UNAVAILABLE);

      await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the reset' });
      expect(server.calls[0]?.closed).toBe(http2.NGHTTP2_CANCEL);
      expect(messages).toEqual([]);
    });
  });

  // RST_STREAM before the status, by the gRPC table of HTTP/2 error codes.
  describe('RST_STREAM', () => {
    const details = (name: string) =>
      name === 'NO_ERROR'
        ? 'the stream ended without a gRPC status'
        : `the server reset the stream (${name})`;
    const table: [name: string, code: number, expected: status][] = [
      ['NO_ERROR', http2.NGHTTP2_NO_ERROR, status.INTERNAL],
      ['PROTOCOL_ERROR', http2.NGHTTP2_PROTOCOL_ERROR, status.INTERNAL],
      ['INTERNAL_ERROR', http2.NGHTTP2_INTERNAL_ERROR, status.INTERNAL],
      ['FLOW_CONTROL_ERROR', http2.NGHTTP2_FLOW_CONTROL_ERROR, status.INTERNAL],
      ['REFUSED_STREAM', http2.NGHTTP2_REFUSED_STREAM, status.UNAVAILABLE],
      ['CANCEL', http2.NGHTTP2_CANCEL, status.CANCELLED],
      ['COMPRESSION_ERROR', http2.NGHTTP2_COMPRESSION_ERROR, status.INTERNAL],
      ['CONNECT_ERROR', http2.NGHTTP2_CONNECT_ERROR, status.INTERNAL],
      ['ENHANCE_YOUR_CALM', http2.NGHTTP2_ENHANCE_YOUR_CALM, status.RESOURCE_EXHAUSTED],
      ['INADEQUATE_SECURITY', http2.NGHTTP2_INADEQUATE_SECURITY, status.PERMISSION_DENIED],
      ['HTTP_1_1_REQUIRED', http2.NGHTTP2_HTTP_1_1_REQUIRED, status.INTERNAL],
    ];

    it.each(table)('%s before the response', async (name, code, expected) => {
      const ended = await ending((stream) => {
        stream.close(code);
      });
      expect(ended).toEqual({
        code: expected,
        details: details(name),
      });
    });

    it.each(table)('%s after a message', async (name, code, expected) => {
      const server = await serve(resetAfterMessage(code));
      const { ended, messages } = startCall(new GrpcSessionPool(), server.target);

      expect(await ended).toEqual({
        code: expected,
        details: details(name),
      });
      expect(messages).toEqual([Buffer.from('x')]);
    });
  });

  describe('messages it refuses', () => {
    it.each<[string, Script, GrpcCallStatus]>([
      [
        'message-over-limit',
        (stream) => {
          stream.respond(GRPC_HEADERS);
          stream.write(framed(Buffer.alloc(2000)));
        },
        {
          code: status.RESOURCE_EXHAUSTED,
          details: 'message of 2000 bytes exceeds the limit of 1024 bytes',
          refused: { kind: 'too-large', bytes: 2000, limit: 1024 },
        },
      ],
      [
        'decompresses-over-limit',
        (stream) => {
          stream.respond({ ...GRPC_HEADERS, 'grpc-encoding': 'gzip' });
          stream.write(framed(gzipSync(Buffer.alloc(5000)), true));
        },
        {
          code: status.RESOURCE_EXHAUSTED,
          details: 'message exceeds the limit of 1024 bytes once decompressed',
          refused: { kind: 'too-large-decompressed', limit: 1024 },
        },
      ],
      [
        'compressed-without-encoding',
        (stream) => {
          stream.respond(GRPC_HEADERS);
          stream.write(framed(Buffer.from('x'), true));
        },
        { code: status.INTERNAL, details: 'compressed message with grpc-encoding "identity"' },
      ],
    ])('%s', async (_, script, expected) => {
      expect(await ending(script)).toEqual(expected);
    });

    it('resets a call it ends on a message over the limit', async () => {
      const server = await serve((stream) => {
        stream.respond(GRPC_HEADERS);
        stream.write(framed(Buffer.alloc(2000)));
      });
      await startCall(new GrpcSessionPool(), server.target).ended;

      await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the reset' });
      expect(server.calls[0]?.closed).toBe(http2.NGHTTP2_CANCEL);
    });
  });

  it('inflates a gzip message when the server names its encoding', async () => {
    const server = await serve((stream) => {
      stream.respond({ ...GRPC_HEADERS, 'grpc-encoding': 'gzip' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => {
        stream.sendTrailers(OK_TRAILERS);
      });
      stream.end(framed(gzipSync(Buffer.from('inventory')), true));
    });
    const { messages, ended } = startCall(new GrpcSessionPool(), server.target);

    expect((await ended).code).toBe(status.OK);
    expect(messages).toEqual([Buffer.from('inventory')]);
  });

  it('carries a 16 MiB message through flow control', async () => {
    const large = Buffer.alloc(16 * 1024 * 1024, 1);
    const server = await serve((stream) => {
      stream.respond(GRPC_HEADERS, { waitForTrailers: true });
      stream.on('wantTrailers', () => {
        stream.sendTrailers(OK_TRAILERS);
      });
      stream.end(framed(large));
    });
    const { messages, ended } = startCall(new GrpcSessionPool(), server.target, {
      maxMessageBytes: large.length,
    });

    expect((await ended).code).toBe(status.OK);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.equals(large)).toBe(true);
  });

  it('cancels with RST_STREAM(CANCEL), reporting nothing after', async () => {
    const server = await serve((stream) => {
      stream.respond(GRPC_HEADERS);
      stream.write(framed(Buffer.from('first')));
    });
    const pool = new GrpcSessionPool();
    const { call, messages, statuses, session } = startCall(pool, server.target);
    await waitFor(() => messages.length === 1, { description: 'the first message' });
    call.cancel();
    call.cancel();
    pool.release(session, false);

    await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the reset' });
    expect(server.calls[0]?.closed).toBe(http2.NGHTTP2_CANCEL);
    server.calls[0]?.stream.write(framed(Buffer.from('late')));
    await waitFor(() => server.sessions.size === 0, { description: 'the session closed' });
    expect(messages).toHaveLength(1);
    expect(statuses).toEqual([]);
  });

  it('ends a call at its deadline, telling the server the timeout', async () => {
    const server = await serve(() => undefined);
    // Long enough for the session to connect on a loaded machine, so that the call reaches the
    // server before its deadline.
    const { ended } = startCall(new GrpcSessionPool(), server.target, { timeoutMs: 2000 });

    expect(await ended).toEqual({ code: status.DEADLINE_EXCEEDED, details: 'deadline exceeded' });
    await waitFor(() => server.calls.length > 0, { description: 'the call at the server' });
    expect(server.calls[0]?.headers['grpc-timeout']).toBe('2000m');
    await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the reset' });
    expect(server.calls[0]?.closed).toBe(http2.NGHTTP2_CANCEL);
  });

  it('reports a connection dropped mid-call as UNAVAILABLE', async () => {
    const server = await serve((stream) => {
      stream.respond(GRPC_HEADERS);
      stream.write(framed(Buffer.from('first')));
    });
    const { messages, ended } = startCall(new GrpcSessionPool(), server.target);
    await waitFor(() => messages.length === 1, { description: 'the first message' });
    for (const session of server.sessions) session.destroy();

    expect(await ended).toEqual({ code: status.UNAVAILABLE, details: 'connection lost' });
  });

  it.each([
    ['without a deadline', undefined],
    ['with a deadline', 60_000],
  ])('keeps no hold on its request once sent, %s', async (_, timeoutMs) => {
    // A watch lasts as long as its plugin, and its request is usually a slice of Node's Buffer
    // pool: holding it would keep the pool's whole slab.
    const received: Buffer[] = [];
    const server = await serve((stream) => {
      stream.on('data', (chunk: Buffer) => received.push(chunk));
      stream.on('end', () => {
        stream.respond(GRPC_HEADERS);
        stream.write(framed(Buffer.from('first')));
      });
    });
    const pool = new GrpcSessionPool();
    const session = pool.acquire(server.target);
    const messages: Buffer[] = [];
    const open = () => {
      const request = Buffer.from('node-1');
      const call = new GrpcCall({
        session,
        path: '/test.Service/Method',
        request,
        maxMessageBytes: 1024,
        timeoutMs,
        listener: { message: (bytes) => messages.push(bytes), status: () => undefined },
      });
      return { call, request: new WeakRef(request) };
    };
    const { call, request } = open();
    await waitFor(() => messages.length === 1, { description: 'the first message' });
    collectGarbage();

    expect(Buffer.concat(received)).toEqual(framed(Buffer.from('node-1')));
    expect(request.deref()).toBeUndefined();
    call.cancel();
    pool.release(session, false);
  });

  it('reports a refused connection as UNAVAILABLE, naming the cause', async () => {
    const server = await serve(() => undefined);
    await server.close();
    const { ended } = startCall(new GrpcSessionPool(), server.target);

    expect(await ended).toEqual({
      code: status.UNAVAILABLE,
      details: expect.stringMatching(/^no connection: .*ECONNREFUSED/) as unknown,
    });
  });
});
