import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { RedisOutageLog } from './log-redis-outages';

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
const lostLock = new Error('Missing lock for job 7. moveToFinished');
const messages = (lines: Record<string, unknown>[]) => lines.map((line) => line.msg);

describe('RedisOutageLog', () => {
  let clock: number;
  let lines: Record<string, unknown>[];
  let log: RedisOutageLog;
  let changes: string[];

  beforeEach(() => {
    clock = 1_000;
    changes = [];
    const captured = capturedLogger();
    lines = captured.lines;
    log = new RedisOutageLog({
      logger: captured.logger,
      clock: { now: () => clock },
      onChange: (connection, up) => changes.push(`${connection} ${up ? 'up' : 'down'}`),
    });
  });

  it('logs one line when an outage starts and one, with its length and count, when it ends', () => {
    const client = new EventEmitter();
    log.watch('api', client);

    client.emit('ready');
    for (let attempt = 0; attempt < 5; attempt++) client.emit('error', refused());
    clock += 6_500;
    client.emit('ready');

    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        connection: 'api',
        err: 'connect ECONNREFUSED 127.0.0.1:6379',
        msg: 'redis unavailable',
      }),
      expect.objectContaining({
        level: 30,
        durationMs: 6_500,
        suppressedErrors: 4,
        connections: ['api'],
        msg: 'redis reconnected',
      }),
    ]);
    expect(lines[0]).not.toHaveProperty('stack');
    expect(changes).toEqual(['api down', 'api up']);
  });

  it('logs each outage once', () => {
    const client = new EventEmitter();
    log.watch('api', client);

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

  it('logs one outage for all the connections of the process, over when the last is back', () => {
    const main = new EventEmitter();
    const pipelines = new EventEmitter();
    const queue = new EventEmitter();
    const worker = new EventEmitter();
    log.watch('syncer', main);
    log.watch('syncer-sync', pipelines);
    log.addErrorSources('syncer', () => true, queue, worker);

    main.emit('error', refused());
    pipelines.emit('error', refused());
    queue.emit('error', refused());
    worker.emit('error', refused());
    main.emit('ready');
    expect(messages(lines)).toEqual(['redis unavailable']);
    clock += 2_000;
    pipelines.emit('ready');

    expect(lines[1]).toEqual(
      expect.objectContaining({
        msg: 'redis reconnected',
        durationMs: 2_000,
        suppressedErrors: 3,
        connections: ['syncer', 'syncer-sync'],
      }),
    );
  });

  it("starts an outage from a queue's connection error, which the connection's ready ends", () => {
    const client = new EventEmitter();
    const worker = new EventEmitter();
    log.watch('syncer', client);
    log.addErrorSources('syncer', () => true, worker);

    worker.emit('error', refused());
    client.emit('ready');

    expect(messages(lines)).toEqual(['redis unavailable', 'redis reconnected']);
  });

  it('logs any other error of a queue as an error, not an outage', () => {
    const client = new EventEmitter();
    const worker = new EventEmitter();
    log.watch('syncer', client);
    log.addErrorSources('syncer', (error) => error !== lostLock, worker);

    worker.emit('error', lostLock);
    client.emit('error', refused());
    worker.emit('error', refused());
    client.emit('ready');

    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        connection: 'syncer',
        err: 'Missing lock for job 7. moveToFinished',
        msg: 'redis error',
      }),
      expect.objectContaining({ level: 50, msg: 'redis unavailable' }),
      expect.objectContaining({ level: 30, msg: 'redis reconnected', suppressedErrors: 1 }),
    ]);
  });

  it('says nothing on the first connect', () => {
    const client = new EventEmitter();
    log.watch('api', client);

    client.emit('ready');
    client.emit('ready');

    expect(lines).toEqual([]);
  });

  it('is the error listener of what it watches, so that nothing reaches stderr', () => {
    const client = new EventEmitter();
    const queue = new EventEmitter();
    log.watch('api', client);
    log.addErrorSources('api', () => false, queue);

    // An EventEmitter without an error listener throws what it emits.
    expect(() => client.emit('error', refused())).not.toThrow();
    expect(() => queue.emit('error', refused())).not.toThrow();
  });

  it('stops listening when detached', () => {
    const client = new EventEmitter();
    const queue = new EventEmitter();
    log.watch('api', client);
    log.addErrorSources('api', () => false, queue);

    log.detach();

    expect(client.listenerCount('error')).toBe(0);
    expect(client.listenerCount('ready')).toBe(0);
    expect(queue.listenerCount('error')).toBe(0);
    expect(lines).toEqual([]);
  });

  it('logs what was thrown when it is not an Error', () => {
    const client = new EventEmitter();
    log.watch('api', client);

    client.emit('error', 'NOAUTH Authentication required');

    expect(lines).toEqual([
      expect.objectContaining({ err: 'NOAUTH Authentication required', msg: 'redis unavailable' }),
    ]);
  });
});
