import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { logRedisOutages } from './log-redis-outages';

/** A logger whose lines are parsed into `lines`. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write: (chunk: Buffer, _encoding, callback) => {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  return { lines, logger: createLogger({ service: 'test', level: 'debug', destination }) };
}

const refused = () => new Error('connect ECONNREFUSED 127.0.0.1:6379');
const messages = (lines: Record<string, unknown>[]) => lines.map((line) => line.msg);

describe('logRedisOutages', () => {
  it('logs one line when an outage starts and one when the connection is ready again', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    logRedisOutages({ logger, sources: [client], fields: { connection: 'api' } });

    client.emit('ready');
    for (let attempt = 0; attempt < 5; attempt++) client.emit('error', refused());
    client.emit('ready');

    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        connection: 'api',
        err: 'connect ECONNREFUSED 127.0.0.1:6379',
        msg: 'redis unavailable',
      }),
      expect.objectContaining({ level: 30, connection: 'api', msg: 'redis reconnected' }),
    ]);
    expect(lines[0]).not.toHaveProperty('stack');
  });

  it('logs each outage once', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    logRedisOutages({ logger, sources: [client] });

    for (let outage = 0; outage < 3; outage++) {
      client.emit('error', refused());
      client.emit('error', refused());
      client.emit('ready');
    }

    expect(messages(lines)).toEqual([
      'redis unavailable',
      'redis reconnected',
      'redis unavailable',
      'redis reconnected',
      'redis unavailable',
      'redis reconnected',
    ]);
  });

  it('treats every source as one connection: a queue re-emitting its client errors adds nothing', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    const queue = new EventEmitter();
    logRedisOutages({ logger, sources: [client, queue] });

    client.emit('error', refused());
    queue.emit('error', refused());
    queue.emit('error', refused());
    client.emit('ready');

    expect(messages(lines)).toEqual(['redis unavailable', 'redis reconnected']);
  });

  it('says nothing on the first connect', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    logRedisOutages({ logger, sources: [client] });

    client.emit('ready');
    client.emit('ready');

    expect(lines).toEqual([]);
  });

  it('is the error listener of its sources, so that nothing reaches stderr', () => {
    const { logger } = capturedLogger();
    const client = new EventEmitter();
    logRedisOutages({ logger, sources: [client] });

    // An EventEmitter without an error listener throws what it emits.
    expect(() => client.emit('error', refused())).not.toThrow();
  });

  it('stops listening when detached', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    const log = logRedisOutages({ logger, sources: [client] });

    log.detach();

    expect(client.listenerCount('error')).toBe(0);
    expect(client.listenerCount('ready')).toBe(0);
    expect(lines).toEqual([]);
  });

  it('counts a source added later as one more emitter of the same connection', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    const log = logRedisOutages({ logger, sources: [client] });
    client.emit('error', refused());

    const worker = new EventEmitter();
    log.add(worker, client);
    worker.emit('error', refused());
    client.emit('ready');

    expect(messages(lines)).toEqual(['redis unavailable', 'redis reconnected']);
    expect(client.listenerCount('error')).toBe(1);
  });

  it('logs what was thrown when it is not an Error', () => {
    const { lines, logger } = capturedLogger();
    const client = new EventEmitter();
    logRedisOutages({ logger, sources: [client] });

    client.emit('error', 'NOAUTH Authentication required');

    expect(lines).toEqual([
      expect.objectContaining({ err: 'NOAUTH Authentication required', msg: 'redis unavailable' }),
    ]);
  });
});
