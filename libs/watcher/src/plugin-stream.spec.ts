import { ManualClock } from '@slicekeeper/time/testing';
import { PluginStream } from './plugin-stream';
import type { PluginStreamOptions } from './plugin-stream';
import { ScriptedConnector, gpus, registration, silentLogger } from './testing/fakes';

const ENDPOINT = 'unix:///plugins/gpu.sock';

describe('PluginStream rejections', () => {
  let clock: ManualClock;
  let connector: ScriptedConnector;
  let events: string[];

  beforeEach(() => {
    clock = new ManualClock();
    connector = new ScriptedConnector();
    events = [];
  });

  function open(options: Partial<PluginStreamOptions> = {}): PluginStream {
    const stream = new PluginStream({
      registration: registration(ENDPOINT, 1),
      connector: connector.connect,
      clock,
      backoff: { initialMs: 1000, maxMs: 8000, jitter: 0 },
      logger: silentLogger,
      onChange: (s) => events.push(`change ${s.state}`),
      onRejected: (s, problem) => events.push(`rejected ${s.state} ${problem}`),
      onReconnect: () => events.push('reconnect'),
      ...options,
    });
    stream.start();
    return stream;
  }

  it('keeps the call and the last inventory on a rejected message; the next good one clears it', () => {
    const stream = open();
    connector.last(ENDPOINT).send(gpus(2));
    events = [];

    connector.last(ENDPOINT).reject('pools[0].generation: out of range');
    expect(events).toEqual([
      'rejected streaming pools[0].generation: out of range',
      // The key re-evaluates, as a rejection says the driver is alive.
      'change streaming',
    ]);
    expect(stream.lastRejection).toBe('pools[0].generation: out of range');
    expect(stream.state).toBe('streaming');
    expect(stream.latest).toEqual(gpus(2));
    expect(connector.calls).toHaveLength(1);
    expect(connector.last(ENDPOINT).cancelled).toBe(false);
    expect(clock.pending()).toEqual([]);

    connector.last(ENDPOINT).send(gpus(3));
    expect(stream.lastRejection).toBeUndefined();
    expect(stream.latest).toEqual(gpus(3));
  });

  it('reconnects with backoff after a rejection that ended the call, keeping the rejection', async () => {
    const stream = open();
    connector
      .last(ENDPOINT)
      .reject('message of 2097152 bytes exceeds the limit of 1048576 bytes', true);
    expect(events).toEqual([
      'change connecting',
      'rejected connecting message of 2097152 bytes exceeds the limit of 1048576 bytes',
      'reconnect',
      'change backoff',
    ]);
    expect(stream.state).toBe('backoff');
    expect(stream.lastRejection).toBe(
      'message of 2097152 bytes exceeds the limit of 1048576 bytes',
    );
    expect(stream.error).toBe('message of 2097152 bytes exceeds the limit of 1048576 bytes');
    expect(clock.pending()).toEqual([1000]);

    await clock.advance(1000);
    expect(connector.calls).toHaveLength(2);
    expect(stream.state).toBe('connecting');
    // Still known to be the driver's bug while the new call has not delivered anything.
    expect(stream.lastRejection).toBe(
      'message of 2097152 bytes exceeds the limit of 1048576 bytes',
    );

    connector.last(ENDPOINT).reject('too large again', true);
    expect(clock.pending()).toEqual([2000]);
    expect(stream.reconnects).toBe(2);

    await clock.advance(2000);
    connector.last(ENDPOINT).send(gpus(1));
    expect(stream.state).toBe('streaming');
    expect(stream.lastRejection).toBeUndefined();
    expect(stream.error).toBeUndefined();
  });

  it('forgets the rejection when a later attempt cannot reach the plugin', async () => {
    const stream = open();
    connector.last(ENDPOINT).reject('undecodable', true);
    await clock.advance(1000);
    connector.last(ENDPOINT).fail('unavailable');
    // The plugin is now unreachable: nothing says it is alive any more.
    expect(stream.lastRejection).toBeUndefined();
    expect(stream.state).toBe('backoff');
  });

  it('ignores what a replaced call reports', async () => {
    const stream = open();
    const first = connector.last(ENDPOINT);
    first.reject('too large', true);
    await clock.advance(1000);
    connector.last(ENDPOINT).send(gpus(1));
    events = [];
    first.reject('late');
    expect(events).toEqual([]);
    expect(stream.lastRejection).toBeUndefined();
  });

  it('reports nothing after close', () => {
    const stream = open();
    const call = connector.last(ENDPOINT);
    stream.close('test over');
    events = [];
    call.reject('late');
    expect(events).toEqual([]);
    expect(stream.lastRejection).toBeUndefined();
  });
});
