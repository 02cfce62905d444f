import { constants as http2 } from 'node:http2';
import type { Http2Server } from 'node:http2';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { waitFor } from '@slicekeeper/testing';
import { ManualClock } from '@slicekeeper/time/testing';
import { GrpcSessionPool } from './grpc-session';
import {
  GRPC_HEADERS,
  OK_TRAILERS,
  blackHoleRelay,
  framed,
  rawServer,
  silentServer,
  startCall,
} from './testing/raw-grpc-server';

describe('GrpcSessionPool', () => {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  /**
   * A server whose calls stream one message and stay open; `failAll` ends them UNAVAILABLE,
   * `finishAll` sends one more message and OK.
   */
  async function openServer(listen?: (server: Http2Server) => void) {
    const server = await rawServer((stream) => {
      stream.respond(GRPC_HEADERS, { waitForTrailers: true });
      stream.write(framed(Buffer.from('hello')));
    }, listen);
    closers.push(server.close);
    const endAll = (trailers: Record<string, string>, last?: Buffer) => {
      for (const { stream } of server.calls) {
        if (stream.closed) continue;
        stream.once('wantTrailers', () => {
          stream.sendTrailers(trailers);
        });
        stream.end(last);
      }
    };
    return {
      ...server,
      failAll: () => {
        endAll({ 'grpc-status': '14', 'grpc-message': 'driver failure' });
      },
      finishAll: () => {
        endAll(OK_TRAILERS, framed(Buffer.from('bye')));
      },
    };
  }

  /** Cancels a call and gives its session back, as the connector does. */
  function stop(pool: GrpcSessionPool, started: ReturnType<typeof startCall>) {
    started.call.cancel();
    pool.release(started.session, false);
  }

  it('shares one session per target, closed with its last holder', async () => {
    const server = await openServer();
    const pool = new GrpcSessionPool();
    const a = startCall(pool, server.target);
    const b = startCall(pool, server.target);
    await waitFor(() => a.messages.length === 1 && b.messages.length === 1, {
      description: 'both calls',
    });

    expect(a.session).toBe(b.session);
    expect(server.connections()).toBe(1);
    stop(pool, a);
    await waitFor(() => server.calls[0]?.closed !== undefined, { description: 'the first call' });
    expect(server.sessions.size).toBe(1);
    stop(pool, b);
    await waitFor(() => server.sessions.size === 0, { description: 'the session closed' });
  });

  it('dials a fresh session after a call on it failed', async () => {
    const server = await openServer();
    const pool = new GrpcSessionPool();
    const a = startCall(pool, server.target);
    await waitFor(() => a.messages.length === 1, { description: 'the call' });
    server.failAll();
    expect((await a.ended).code).toBe(status.UNAVAILABLE);
    const again = startCall(pool, server.target);
    await waitFor(() => again.messages.length === 1, { description: 'the call again' });

    expect(again.session).not.toBe(a.session);
    expect(server.connections()).toBe(2);
    stop(pool, again);
    await waitFor(() => server.sessions.size === 0, { description: 'every session closed' });
  });

  it('dials a unix socket target', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sk-http2-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const server = await openServer((s) => s.listen(join(dir, 'plugin.sock')));
    const pool = new GrpcSessionPool();
    const call = startCall(pool, server.target);
    await waitFor(() => call.messages.length === 1, { description: 'the call' });

    expect(server.target).toBe(`unix://${join(dir, 'plugin.sock')}`);
    stop(pool, call);
  });

  describe('GOAWAY', () => {
    it('graceful (NO_ERROR): open calls finish, new calls go to a new session', async () => {
      const server = await openServer();
      const pool = new GrpcSessionPool();
      const a = startCall(pool, server.target);
      await waitFor(() => a.messages.length === 1, { description: 'the call' });
      const [session] = server.sessions;
      session?.goaway(http2.NGHTTP2_NO_ERROR, 1);
      await waitFor(() => a.session.goneAway, { description: 'the GOAWAY' });

      const b = startCall(pool, server.target);
      await waitFor(() => b.messages.length === 1, { description: 'a call after the GOAWAY' });
      expect(b.session).not.toBe(a.session);
      expect(server.connections()).toBe(2);
      server.finishAll();
      expect(await a.ended).toEqual({ code: status.OK, details: '' });
      expect(a.messages).toEqual([Buffer.from('hello'), Buffer.from('bye')]);
      expect(await b.ended).toEqual({ code: status.OK, details: '' });
    });

    it('graceful: a call the server did not take (above its last stream id) fails UNAVAILABLE', async () => {
      const server = await openServer();
      const pool = new GrpcSessionPool();
      const a = startCall(pool, server.target);
      await waitFor(() => a.messages.length === 1, { description: 'the first call' });
      // The second call is on the wire before the client reads the GOAWAY that refuses it.
      const b = startCall(pool, server.target);
      await waitFor(() => server.calls.length === 2, { description: 'the second call' });
      const [session] = server.sessions;
      session?.goaway(http2.NGHTTP2_NO_ERROR, 1);

      expect(await b.ended).toEqual({
        code: status.UNAVAILABLE,
        details: 'the server reset the stream (REFUSED_STREAM)',
      });
      server.finishAll();
      expect((await a.ended).code).toBe(status.OK);
    });

    it.each([
      ['ENHANCE_YOUR_CALM', http2.NGHTTP2_ENHANCE_YOUR_CALM, 'calm down'],
      ['INTERNAL_ERROR', http2.NGHTTP2_INTERNAL_ERROR, ''],
      ['PROTOCOL_ERROR', http2.NGHTTP2_PROTOCOL_ERROR, ''],
    ])('with an error (%s): every open call fails UNAVAILABLE', async (name, code, debug) => {
      const server = await openServer();
      const pool = new GrpcSessionPool();
      const a = startCall(pool, server.target);
      const b = startCall(pool, server.target);
      await waitFor(() => a.messages.length === 1 && b.messages.length === 1, {
        description: 'both calls',
      });
      const [session] = server.sessions;
      session?.goaway(code, 3, debug === '' ? undefined : Buffer.from(debug));

      const expected = {
        code: status.UNAVAILABLE,
        details: `the server closed the connection (GOAWAY ${name}${debug === '' ? '' : ` "${debug}"`})`,
      };
      expect(await a.ended).toEqual(expected);
      expect(await b.ended).toEqual(expected);
      const again = startCall(pool, server.target);
      await waitFor(() => again.messages.length === 1, { description: 'a call again' });
      expect(server.connections()).toBe(2);
      stop(pool, again);
    });

    it('"too_many_pings" doubles the keepalive time of the next session to that target', async () => {
      const server = await openServer();
      const pool = new GrpcSessionPool({ clock: new ManualClock(), keepaliveTimeMs: 1000 });
      const a = startCall(pool, server.target);
      await waitFor(() => a.messages.length === 1, { description: 'the call' });
      const [session] = server.sessions;
      session?.goaway(http2.NGHTTP2_ENHANCE_YOUR_CALM, 1, Buffer.from('too_many_pings'));

      expect(await a.ended).toEqual({
        code: status.UNAVAILABLE,
        details: 'the server closed the connection (GOAWAY ENHANCE_YOUR_CALM "too_many_pings")',
      });
      expect(pool.keepaliveTimeMs(server.target)).toBe(2000);
      expect(pool.keepaliveTimeMs('127.0.0.1:1')).toBe(1000);
    });
  });

  describe('keepalive', () => {
    it('pings every keepaliveTimeMs after the answer; an unanswered ping fails every call UNAVAILABLE', async () => {
      const server = await openServer();
      const relay = await blackHoleRelay(server.target);
      closers.push(relay.close);
      const clock = new ManualClock();
      const pool = new GrpcSessionPool({ clock, keepaliveTimeMs: 1000, keepaliveTimeoutMs: 300 });
      const a = startCall(pool, relay.target);
      const b = startCall(pool, relay.target);
      await waitFor(() => a.messages.length === 1 && b.messages.length === 1, {
        description: 'both calls',
      });
      expect(clock.pending()).toEqual([1000]);

      // A live server answers: the next ping is due keepaliveTimeMs after the answer.
      await clock.advance(1000);
      await waitFor(() => server.pings() === 1, { description: 'the first ping' });
      await waitFor(() => clock.pending()[0] === 1000, { description: 'the answer' });
      await clock.advance(300);
      expect(a.statuses).toEqual([]);

      // The peer vanishes without closing the connection.
      relay.blackHole();
      await clock.advance(700);
      expect(clock.pending()).toEqual([300]);
      await clock.advance(300);

      const expected = {
        code: status.UNAVAILABLE,
        details: 'keepalive timeout: a ping was not answered within 300 ms',
      };
      expect(await a.ended).toEqual(expected);
      expect(await b.ended).toEqual(expected);
      expect(server.pings()).toBe(1);
    });

    it('sends no ping when keepaliveTimeMs is 0', async () => {
      const server = await openServer();
      const clock = new ManualClock();
      const pool = new GrpcSessionPool({ clock, keepaliveTimeMs: 0 });
      const a = startCall(pool, server.target);
      await waitFor(() => a.messages.length === 1, { description: 'the call' });

      expect(clock.pending()).toEqual([]);
      stop(pool, a);
    });
  });

  describe('connect timeout', () => {
    it('fails the calls of a dial that never becomes an HTTP/2 connection UNAVAILABLE', async () => {
      const silent = await silentServer();
      closers.push(silent.close);
      const clock = new ManualClock();
      const pool = new GrpcSessionPool({ clock, connectTimeoutMs: 5000 });
      const a = startCall(pool, silent.target);
      await waitFor(() => silent.connections() === 1, { description: 'the TCP connection' });
      await clock.advance(4999);
      expect(a.statuses).toEqual([]);
      await clock.advance(1);

      expect(await a.ended).toEqual({
        code: status.UNAVAILABLE,
        details: 'connect timeout: no HTTP/2 connection within 5000 ms',
      });
      await waitFor(() => silent.connections() === 0, { description: 'the dial given up' });
    });

    it('is cleared once connected', async () => {
      const server = await openServer();
      const clock = new ManualClock();
      const pool = new GrpcSessionPool({ clock, connectTimeoutMs: 5000, keepaliveTimeMs: 0 });
      const a = startCall(pool, server.target);
      await waitFor(() => a.messages.length === 1, { description: 'the call' });

      expect(clock.pending()).toEqual([]);
      await clock.advance(5000);
      expect(a.statuses).toEqual([]);
      stop(pool, a);
    });
  });
});
