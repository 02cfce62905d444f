import { createServer, constants as http2 } from 'node:http2';
import type { Http2Server, Http2Session, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { status } from '@grpc/grpc-js';
import { waitFor } from '@slicekeeper/testing';
import { GrpcCall, GrpcSessionPool } from './grpc-http2';
import type { GrpcCallStatus } from './grpc-http2';

/** A gRPC message framed: compressed flag, 4-byte length, the bytes. */
function framed(message: Buffer, compressed = false): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(compressed ? 1 : 0, 0);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** What a server stream saw of a call: its request headers and how it closed. */
interface ServedCall {
  headers: IncomingHttpHeaders;
  stream: ServerHttp2Stream;
  closed?: number;
}

/** A bare HTTP/2 server that answers every call with `serve`, for the bytes a test scripts. */
async function rawServer(
  serve: (stream: ServerHttp2Stream) => void,
  listen: (server: Http2Server) => void = (server) => server.listen(0, '127.0.0.1'),
) {
  const server = createServer();
  const sessions = new Set<Http2Session>();
  const calls: ServedCall[] = [];
  let connections = 0;
  server.on('session', (session) => {
    connections++;
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const call: ServedCall = { headers, stream };
    calls.push(call);
    stream.on('error', () => undefined);
    stream.on('close', () => {
      call.closed = stream.rstCode;
    });
    serve(stream);
  });
  await new Promise<void>((resolve) => {
    server.once('listening', resolve);
    listen(server);
  });
  const address = server.address();
  return {
    target: typeof address === 'string' ? `unix://${address}` : `127.0.0.1:${address?.port ?? 0}`,
    sessions,
    calls,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** A call's messages and status, for a test to await. */
function start(
  pool: GrpcSessionPool,
  target: string,
  options: { maxMessageBytes?: number; timeoutMs?: number } = {},
) {
  const messages: Buffer[] = [];
  const statuses: GrpcCallStatus[] = [];
  let settle: (status: GrpcCallStatus) => void = () => undefined;
  const ended = new Promise<GrpcCallStatus>((resolve) => {
    settle = resolve;
  });
  const session = pool.acquire(target);
  const call = new GrpcCall({
    session: session.session,
    path: '/test.Service/Method',
    request: Buffer.from('request'),
    maxMessageBytes: options.maxMessageBytes ?? 1024,
    timeoutMs: options.timeoutMs,
    listener: {
      message: (bytes) => messages.push(bytes),
      status: (ending) => {
        statuses.push(ending);
        pool.release(session, ending.code !== status.OK);
        settle(ending);
      },
    },
  });
  return { call, messages, statuses, ended, session };
}

const OK_TRAILERS = { 'grpc-status': '0' };

describe('GrpcCall', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function serve(script: (stream: ServerHttp2Stream) => void) {
    const server = await rawServer(script);
    closers.push(server.close);
    return server;
  }

  it('sends a gRPC request and deframes messages split across and packed into DATA frames', async () => {
    const one = framed(Buffer.from('one'));
    const two = framed(Buffer.from('two'));
    const three = framed(Buffer.alloc(3000, 7));
    const server = await serve((stream) => {
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc' },
        { waitForTrailers: true },
      );
      stream.write(Buffer.concat([one, two, three.subarray(0, 2)]));
      stream.write(three.subarray(2, 1000));
      stream.write(Buffer.concat([three.subarray(1000), framed(Buffer.alloc(0))]));
      stream.on('wantTrailers', () => {
        stream.sendTrailers(OK_TRAILERS);
      });
      stream.end();
    });
    const { messages, ended } = start(new GrpcSessionPool(), server.target, {
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

  it.each<[string, (stream: ServerHttp2Stream) => void, GrpcCallStatus]>([
    [
      'trailers-only-status',
      (stream) => {
        stream.respond(
          { ':status': 200, 'grpc-status': '12', 'grpc-message': 'unknown%20method%3A%20x' },
          { endStream: true },
        );
      },
      { code: status.UNIMPLEMENTED, details: 'unknown method: x' },
    ],
    [
      'status-in-trailers',
      (stream) => {
        stream.respond({ ':status': 200 }, { waitForTrailers: true });
        stream.on('wantTrailers', () => {
          stream.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'driver failure' });
        });
        stream.end(framed(Buffer.from('x')));
      },
      { code: status.UNAVAILABLE, details: 'driver failure' },
    ],
    [
      'http-404',
      (stream) => {
        stream.respond({ ':status': 404 }, { endStream: true });
      },
      { code: status.UNIMPLEMENTED, details: 'Received HTTP status code 404' },
    ],
    [
      'http-503-with-body',
      (stream) => {
        stream.respond({ ':status': 503 });
        stream.end('<html>busy</html>');
      },
      { code: status.UNAVAILABLE, details: 'Received HTTP status code 503' },
    ],
    [
      'ended-without-status',
      (stream) => {
        stream.respond({ ':status': 200 });
        stream.end();
      },
      {
        code: status.INTERNAL,
        details: 'Received RST_STREAM with code 0 (Call ended without gRPC status)',
      },
    ],
    [
      'rst-stream-refused',
      (stream) => {
        stream.close(http2.NGHTTP2_REFUSED_STREAM);
      },
      { code: status.UNAVAILABLE, details: 'Stream refused by server' },
    ],
    [
      'message-over-limit',
      (stream) => {
        stream.respond({ ':status': 200 });
        stream.write(framed(Buffer.alloc(2000)));
      },
      {
        code: status.RESOURCE_EXHAUSTED,
        details: 'Received message larger than max (2000 vs 1024)',
      },
    ],
    [
      'compressed-without-encoding',
      (stream) => {
        stream.respond({ ':status': 200 });
        stream.write(framed(Buffer.from('x'), true));
      },
      {
        code: status.INTERNAL,
        details: 'Received compressed message but "grpc-encoding" header was identity',
      },
    ],
    [
      'decompresses-over-limit',
      (stream) => {
        stream.respond({ ':status': 200, 'grpc-encoding': 'gzip' });
        stream.write(framed(gzipSync(Buffer.alloc(5000)), true));
      },
      {
        code: status.RESOURCE_EXHAUSTED,
        details: 'Received message that decompresses to a size larger than 1024',
      },
    ],
  ])('%s', async (_, script, expected) => {
    const server = await serve(script);
    const { ended } = start(new GrpcSessionPool(), server.target);

    expect(await ended).toEqual(expected);
  });

  it('resets a call it ends on a message over the limit', async () => {
    const server = await serve((stream) => {
      stream.respond({ ':status': 200 });
      stream.write(framed(Buffer.alloc(2000)));
    });
    const { ended } = start(new GrpcSessionPool(), server.target);
    await ended;

    await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the reset' });
    expect(server.calls[0]?.closed).toBe(http2.NGHTTP2_CANCEL);
  });

  it('inflates a gzip message when the server names its encoding', async () => {
    const server = await serve((stream) => {
      stream.respond({ ':status': 200, 'grpc-encoding': 'gzip' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => {
        stream.sendTrailers(OK_TRAILERS);
      });
      stream.end(framed(gzipSync(Buffer.from('inventory')), true));
    });
    const { messages, ended } = start(new GrpcSessionPool(), server.target);

    expect((await ended).code).toBe(status.OK);
    expect(messages).toEqual([Buffer.from('inventory')]);
  });

  it('carries a 16 MiB message through flow control', async () => {
    const large = Buffer.alloc(16 * 1024 * 1024, 1);
    const server = await serve((stream) => {
      stream.respond({ ':status': 200 }, { waitForTrailers: true });
      stream.on('wantTrailers', () => {
        stream.sendTrailers(OK_TRAILERS);
      });
      stream.end(framed(large));
    });
    const { messages, ended } = start(new GrpcSessionPool(), server.target, {
      maxMessageBytes: large.length,
    });

    expect((await ended).code).toBe(status.OK);
    expect(messages).toHaveLength(1);
    expect(messages[0]?.equals(large)).toBe(true);
  });

  it('cancels with RST_STREAM(CANCEL), reporting nothing after', async () => {
    const server = await serve((stream) => {
      stream.respond({ ':status': 200 });
      stream.write(framed(Buffer.from('first')));
    });
    const pool = new GrpcSessionPool();
    const { call, messages, statuses, session } = start(pool, server.target);
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
    const { ended } = start(new GrpcSessionPool(), server.target, { timeoutMs: 50 });

    expect(await ended).toEqual({ code: status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
    expect(server.calls[0]?.headers['grpc-timeout']).toBe('50m');
    await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the reset' });
    expect(server.calls[0]?.closed).toBe(http2.NGHTTP2_CANCEL);
  });

  it('reports a connection dropped mid-call as UNAVAILABLE', async () => {
    const server = await serve((stream) => {
      stream.respond({ ':status': 200 });
      stream.write(framed(Buffer.from('first')));
    });
    const { messages, ended } = start(new GrpcSessionPool(), server.target);
    await waitFor(() => messages.length === 1, { description: 'the first message' });
    for (const session of server.sessions) session.destroy();

    expect(await ended).toEqual({ code: status.UNAVAILABLE, details: 'Connection dropped' });
  });

  it('reports a refused connection as UNAVAILABLE, naming the cause', async () => {
    const server = await serve(() => undefined);
    await server.close();
    const { ended } = start(new GrpcSessionPool(), server.target);

    expect(await ended).toEqual({
      code: status.UNAVAILABLE,
      details: expect.stringContaining('ECONNREFUSED') as unknown,
    });
  });
});

describe('GrpcSessionPool', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /** A server whose calls stream one message and stay open; `failAll` ends them UNAVAILABLE. */
  async function openServer(listen?: (server: Http2Server) => void) {
    const server = await rawServer((stream) => {
      stream.respond({ ':status': 200 }, { waitForTrailers: true });
      stream.write(framed(Buffer.from('hello')));
    }, listen);
    closers.push(server.close);
    const failAll = () => {
      for (const { stream } of server.calls) {
        if (stream.closed) continue;
        stream.once('wantTrailers', () => {
          stream.sendTrailers({ 'grpc-status': '14', 'grpc-message': 'driver failure' });
        });
        stream.end();
      }
    };
    return { ...server, failAll };
  }

  it('shares one session per target, closed with its last holder', async () => {
    const server = await openServer();
    const pool = new GrpcSessionPool();
    const a = start(pool, server.target);
    const b = start(pool, server.target);
    await waitFor(() => a.messages.length === 1 && b.messages.length === 1, {
      description: 'both calls',
    });

    expect(a.session).toBe(b.session);
    expect(server.connections()).toBe(1);
    a.call.cancel();
    pool.release(a.session, false);
    await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the first call' });
    expect(server.sessions.size).toBe(1);
    b.call.cancel();
    pool.release(b.session, false);
    await waitFor(() => server.sessions.size === 0, { description: 'the session closed' });
  });

  it('dials a fresh session after a call on it failed', async () => {
    const server = await openServer();
    const pool = new GrpcSessionPool();
    const a = start(pool, server.target);
    await waitFor(() => a.messages.length === 1, { description: 'the call' });
    server.failAll();
    expect((await a.ended).code).toBe(status.UNAVAILABLE);
    const again = start(pool, server.target);
    await waitFor(() => again.messages.length === 1, { description: 'the call again' });

    expect(again.session).not.toBe(a.session);
    expect(server.connections()).toBe(2);
    again.call.cancel();
    pool.release(again.session, false);
    await waitFor(() => server.sessions.size === 0, { description: 'every session closed' });
  });

  it('dials a unix socket target', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sk-http2-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const server = await openServer((s) => s.listen(join(dir, 'plugin.sock')));
    const pool = new GrpcSessionPool();
    const call = start(pool, server.target);
    await waitFor(() => call.messages.length === 1, { description: 'the call' });

    expect(server.target).toBe(`unix://${join(dir, 'plugin.sock')}`);
    call.call.cancel();
    pool.release(call.session, false);
  });
});
