import pino from 'pino';
import { ManualClock } from '@slicekeeper/time/testing';
import { EventRecorder, microTime } from './event-recorder';
import type { EventOccurrence, EventRecordOutcome } from './event-recorder';
import type { EventSeriesWrite, EventWrite } from './kube-event-client';

/** What reached the API server, in order. */
type Sent =
  | { op: 'create'; name: string; reason: string; series?: EventSeriesWrite }
  | { op: 'patch'; name: string; series: EventSeriesWrite; found: boolean };

/**
 * An event sink that keeps what it was sent; it answers 404 for events it never created or that
 * are in `gone`.
 */
class RecordingSink {
  readonly sent: Sent[] = [];
  readonly gone = new Set<string>();
  private readonly created = new Set<string>();
  failCreates = 0;

  create(event: EventWrite): Promise<void> {
    if (this.failCreates > 0) {
      this.failCreates--;
      return Promise.reject(new Error('connection reset'));
    }
    const { name } = event.metadata;
    this.gone.delete(name);
    this.created.add(name);
    this.sent.push({
      op: 'create',
      name,
      reason: event.reason,
      ...(event.series === undefined ? {} : { series: event.series }),
    });
    return Promise.resolve();
  }

  patchSeries(event: EventWrite, series: EventSeriesWrite): Promise<boolean> {
    const found = this.created.has(event.metadata.name) && !this.gone.has(event.metadata.name);
    this.sent.push({ op: 'patch', name: event.metadata.name, series, found });
    return Promise.resolve(found);
  }
}

const NODE_A = { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-a' };

function invalid(note = 'driver gpu.example.com: devices[0].name: Invalid value'): EventOccurrence {
  return {
    regarding: NODE_A,
    type: 'Warning',
    reason: 'InvalidInventory',
    action: 'PublishResourceSlices',
    note,
  };
}

function setup() {
  const clock = new ManualClock();
  const sink = new RecordingSink();
  const outcomes: EventRecordOutcome[] = [];
  const recorder = new EventRecorder({
    sink,
    reportingController: 'slicekeeper.dev/slice-syncer',
    reportingInstance: 'slice-syncer-0',
    logger: pino({ enabled: false }),
    clock,
    refreshIntervalMs: 30 * 60_000,
    finishAfterMs: 6 * 60_000,
    onRecord: (_, outcome) => outcomes.push(outcome),
  });
  recorder.start();
  return { clock, sink, recorder, outcomes };
}

describe('EventRecorder', () => {
  it('makes one Event of a key that fails every minute for an hour, as client-go does', async () => {
    const { clock, sink, recorder } = setup();
    for (let minute = 0; minute < 60; minute++) {
      recorder.record(invalid());
      await clock.advance(60_000);
    }
    await recorder.close();
    const creates = sink.sent.filter((s) => s.op === 'create');
    expect(creates).toHaveLength(1);
    const patches = sink.sent.filter((s) => s.op === 'patch');
    // The second occurrence, then the running count every 30 minutes.
    expect(patches.map((p) => p.series.count)).toEqual([2, 30, 60]);
    expect(patches.every((p) => p.name === creates[0]?.name)).toBe(true);
  });

  it('writes the creation, then series count 2 with the time of the repeat', async () => {
    const { clock, sink, recorder } = setup();
    recorder.record(invalid());
    await clock.advance(5_000);
    recorder.record(invalid());
    await recorder.close();
    expect(sink.sent[0]?.name).toMatch(/^node-a\.[0-9a-f]+$/);
    expect(sink.sent).toEqual([
      { op: 'create', name: sink.sent[0]?.name, reason: 'InvalidInventory' },
      {
        op: 'patch',
        name: sink.sent[0]?.name,
        series: { count: 2, lastObservedTime: microTime(clock.now()) },
        found: true,
      },
    ]);
  });

  it('keeps different notes, reasons and objects apart', async () => {
    const { sink, recorder } = setup();
    recorder.record(invalid('driver a.example.com: devices[0].name: Invalid value'));
    recorder.record(invalid('driver b.example.com: devices[0].name: Invalid value'));
    recorder.record({ ...invalid(), reason: 'FieldsDropped' });
    recorder.record({ ...invalid(), regarding: { ...NODE_A, name: 'node-b', uid: 'uid-b' } });
    await recorder.close();
    expect(sink.sent.map((s) => s.op)).toEqual(['create', 'create', 'create', 'create']);
    expect(new Set(sink.sent.map((s) => s.name)).size).toBe(4);
  });

  it('ends a quiet series with its final count; the next occurrence is a new Event', async () => {
    const { clock, sink, recorder } = setup();
    const lastObservedTime = microTime(clock.now());
    for (let i = 0; i < 4; i++) recorder.record(invalid());
    await clock.advance(7 * 60_000);
    const first = sink.sent[0]?.name;
    expect(sink.sent.at(-1)).toEqual({
      op: 'patch',
      name: first,
      series: { count: 4, lastObservedTime },
      found: true,
    });
    // The finish check runs every 6 minutes: the series ends at the second one, 12 minutes in.
    await clock.advance(6 * 60_000);
    const written = sink.sent.length;
    recorder.record(invalid());
    await recorder.close();
    expect(sink.sent.slice(written).map((s) => s.op)).toEqual(['create']);
    expect(sink.sent.at(-1)?.name).not.toBe(first);
  });

  it('creates the Event again, with its series, when the server no longer has it', async () => {
    const { clock, sink, recorder } = setup();
    recorder.record(invalid());
    await clock.advance(1_000);
    const name = sink.sent[0]?.name ?? '';
    // The server's event TTL deleted it.
    sink.gone.add(name);
    recorder.record(invalid());
    await recorder.close();
    const series = { count: 2, lastObservedTime: microTime(clock.now()) };
    expect(sink.sent.slice(1)).toEqual([
      { op: 'patch', name, series, found: false },
      { op: 'create', name, reason: 'InvalidInventory', series },
    ]);
  });

  it('loses a failed write without holding anything up, and recovers at the repeat', async () => {
    const { clock, sink, recorder, outcomes } = setup();
    sink.failCreates = 1;
    recorder.record(invalid());
    await clock.advance(1_000);
    expect(outcomes).toEqual(['failed']);
    expect(sink.sent).toEqual([]);
    recorder.record(invalid());
    await recorder.close();
    expect(outcomes).toEqual(['failed', 'series']);
    expect(sink.sent.map((s) => s.op)).toEqual(['patch', 'create']);
  });

  it("sends a storm's Events, then its series' final counts, one request at a time, in order", async () => {
    const sink = new RecordingSink();
    const released: (() => void)[] = [];
    let open = 0;
    let mostOpen = 0;
    /** Holds every request open until the test releases it, counting those open at once. */
    const held =
      <A extends unknown[], R>(send: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        open++;
        mostOpen = Math.max(mostOpen, open);
        await new Promise<void>((resolve) => released.push(resolve));
        open--;
        return send(...args);
      };
    const clock = new ManualClock();
    const recorder = new EventRecorder({
      sink: {
        create: held((event: EventWrite) => sink.create(event)),
        patchSeries: held((event: EventWrite, series: EventSeriesWrite) =>
          sink.patchSeries(event, series),
        ),
      },
      reportingController: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'slice-syncer-0',
      logger: pino({ enabled: false }),
      clock,
      finishAfterMs: 6 * 60_000,
    });
    recorder.start();
    const nodes = Array.from({ length: 50 }, (_, i) => ({ ...NODE_A, name: `node-${i}` }));
    for (const regarding of nodes) recorder.record({ ...invalid(), regarding });
    for (const regarding of nodes) recorder.record({ ...invalid(), regarding });
    // Every series ends quiet: 50 final counts at once.
    await clock.advance(6 * 60_000);
    const closed = recorder.close();
    for (let write = 0; write < 150; write++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(open).toBe(1);
      released.shift()?.();
    }
    await closed;
    expect(mostOpen).toBe(1);
    const names = nodes.map((node) => node.name);
    const byNode = (ops: Sent[]) => ops.map((sent) => sent.name.split('.')[0]);
    expect(byNode(sink.sent.slice(0, 50))).toEqual(names);
    expect(sink.sent.slice(0, 50).every((sent) => sent.op === 'create')).toBe(true);
    expect(byNode(sink.sent.slice(50, 100))).toEqual(names);
    expect(byNode(sink.sent.slice(100))).toEqual(names);
    expect(sink.sent.slice(50).every((sent) => sent.op === 'patch' && sent.found)).toBe(true);
  });

  it('drops what finds its queue full behind a server that does not answer, says so once, and goes on after', async () => {
    const sink = new RecordingSink();
    const released: (() => void)[] = [];
    const warnings: string[] = [];
    const outcomes: EventRecordOutcome[] = [];
    const recorder = new EventRecorder({
      sink: {
        create: async (event: EventWrite) => {
          await new Promise<void>((resolve) => released.push(resolve));
          return sink.create(event);
        },
        patchSeries: (event, series) => sink.patchSeries(event, series),
      },
      reportingController: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'slice-syncer-0',
      logger: pino(
        {},
        { write: (line: string) => warnings.push((JSON.parse(line) as { msg: string }).msg) },
      ),
      clock: new ManualClock(),
      maxQueued: 3,
      onRecord: (_, outcome) => outcomes.push(outcome),
    });
    const node = (i: number) => ({ ...invalid(), regarding: { ...NODE_A, name: `node-${i}` } });
    for (let i = 0; i < 6; i++) recorder.record(node(i));
    // One write under way, three waiting: the fifth and sixth are dropped, and said once.
    expect(outcomes).toEqual(['failed', 'failed']);
    expect(warnings).toEqual([
      'events dropped: the API server is not keeping up with their writes',
    ]);
    /** Answers each request held open until every queued write is done. */
    const drain = async () => {
      const flushed = recorder.flush().then(() => true);
      const tick = () => new Promise<boolean>((resolve) => setImmediate(resolve, false));
      while (!(await Promise.race([flushed, tick()]))) released.shift()?.();
    };
    await drain();
    expect(sink.sent.map((sent) => sent.name.split('.')[0])).toEqual([
      'node-0',
      'node-1',
      'node-2',
      'node-3',
    ]);
    // The server answers again: a dropped Event comes back at its repeat, with its series.
    recorder.record(node(4));
    await drain();
    expect(sink.sent.at(-1)).toMatchObject({ op: 'create', series: { count: 2 } });
    expect(outcomes.slice(2)).toEqual(['created', 'created', 'created', 'created', 'series']);
    expect(warnings).toHaveLength(1);
  });

  it("cuts a note to the API server's 1 kB on a character boundary", async () => {
    const sink = new RecordingSink();
    const notes: string[] = [];
    const recorder = new EventRecorder({
      sink: {
        create: (event) => {
          notes.push(event.note);
          return sink.create(event);
        },
        patchSeries: (event, series) => sink.patchSeries(event, series),
      },
      reportingController: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'slice-syncer-0',
      logger: pino({ enabled: false }),
    });
    recorder.record(invalid('é'.repeat(2_000)));
    await recorder.close();
    expect(Buffer.byteLength(notes[0] ?? '')).toBeLessThanOrEqual(1024);
    expect(notes[0]).toMatch(/^é+…$/);
  });
});
