import { createServer } from 'node:http2';
import type { Http2Server, Http2Session, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { createServer as createNetServer, connect as connectNet } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { status } from '@grpc/grpc-js';
import { GrpcCall } from '../grpc-http2';
import type { GrpcSession, GrpcSessionPool } from '../grpc-session';
import type { GrpcCallStatus } from '../grpc-status';

/** A gRPC message framed: compressed flag, 4-byte length, the bytes. */
export function framed(message: Buffer, compressed = false): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(compressed ? 1 : 0, 0);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** The response headers of a gRPC server. */
export const GRPC_HEADERS = { ':status': 200, 'content-type': 'application/grpc' } as const;
export const OK_TRAILERS = { 'grpc-status': '0' } as const;

/** What a server stream saw of a call: its request headers and how it closed. */
export interface ServedCall {
  headers: IncomingHttpHeaders;
  stream: ServerHttp2Stream;
  closed?: number;
}

/** A bare HTTP/2 server that answers every call with `serve`, for the bytes a test scripts. */
export async function rawServer(
  serve: (stream: ServerHttp2Stream) => void,
  listen: (server: Http2Server) => void = (server) => server.listen(0, '127.0.0.1'),
) {
  const server = createServer();
  const sessions = new Set<Http2Session>();
  const calls: ServedCall[] = [];
  let connections = 0;
  let pings = 0;
  server.on('session', (session) => {
    connections++;
    sessions.add(session);
    session.on('ping', () => pings++);
    session.on('error', () => undefined);
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
    /** PING frames received, on every session. */
    pings: () => pings,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/**
 * A TCP relay to `upstream` (`host:port`) that can stop passing bytes while keeping its
 * connections open: a peer that vanished without closing (a cable pulled, a host frozen).
 */
export async function blackHoleRelay(upstream: string) {
  const [host = '', port = ''] = upstream.split(':');
  const open = new Set<Socket>();
  let blackHoled = false;
  let connections = 0;
  const relay = createNetServer((socket) => {
    connections++;
    const remote = connectNet(Number(port), host);
    open.add(socket).add(remote);
    const pass = (to: Socket) => (chunk: Buffer) => {
      if (!blackHoled) to.write(chunk);
    };
    socket.on('data', pass(remote));
    remote.on('data', pass(socket));
    const drop = () => {
      open.delete(socket);
      open.delete(remote);
      socket.destroy();
      remote.destroy();
    };
    socket.on('close', drop).on('error', drop);
    remote.on('close', drop).on('error', drop);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const { port: relayPort } = relay.address() as AddressInfo;
  return {
    target: `127.0.0.1:${relayPort}`,
    connections: () => connections,
    /** From now on, nothing passes either way. */
    blackHole: () => {
      blackHoled = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        relay.close(() => {
          resolve();
        });
      }),
  };
}

/**
 * A server that accepts connections and never says a word: no HTTP/2 SETTINGS, so a dial to it
 * never becomes a connection.
 */
export async function silentServer() {
  const open = new Set<Socket>();
  const server = createNetServer((socket) => {
    open.add(socket);
    // Reads (and ignores) what the client sends, so that its close is seen.
    socket.resume();
    socket.on('error', () => undefined).on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    connections: () => open.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}

/** A call's messages and status, for a test to await. */
export function startCall(
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
  const session: GrpcSession = pool.acquire(target);
  const call = new GrpcCall({
    session,
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
