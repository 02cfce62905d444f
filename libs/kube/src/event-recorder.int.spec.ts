import { startKubeEmulator } from '@slicekeeper/apiserver';
import type { RunningKubeEmulator } from '@slicekeeper/apiserver';
import { ManualClock } from '@slicekeeper/time/testing';
import { requestJson } from '@slicekeeper/testing';
import { EventRecorder } from './event-recorder';
import type { EventOccurrence } from './event-recorder';
import { KubeEventClient } from './kube-event-client';
import { KubeTransport } from './kube-transport';

/** A stored Event as core/v1 shows it, with the fields this spec reads. */
interface StoredEvent {
  metadata: { name: string; namespace: string };
  involvedObject: { kind: string; name: string; uid: string };
  reason: string;
  message: string;
  type: string;
  reportingComponent: string;
  reportingInstance: string;
  series?: { count: number; lastObservedTime: string };
}

const occurrence: EventOccurrence = {
  regarding: { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'node-a' },
  type: 'Warning',
  reason: 'InvalidInventory',
  action: 'PublishResourceSlices',
  note: 'driver gpu.example.com: inventory refused, nothing published from it: pools[0].devices[3].name: Invalid value: "GPU_3"',
};

let running: RunningKubeEmulator;
let clock: ManualClock;
let transport: KubeTransport;
let recorder: EventRecorder;
let requests: string[];

beforeEach(async () => {
  clock = new ManualClock();
  running = await startKubeEmulator({ port: 0, clock });
  transport = new KubeTransport({ kind: 'yaml', text: running.kubeconfig });
  requests = [];
  recorder = new EventRecorder({
    sink: new KubeEventClient({
      transport,
      onRequest: (verb, resource, code) => requests.push(`${verb} ${resource} ${String(code)}`),
    }),
    reportingController: 'slicekeeper.dev/slice-syncer',
    reportingInstance: 'slice-syncer-7d9f-x2',
    logger: { warn: () => undefined },
    clock,
  });
  recorder.start();
});

afterEach(async () => {
  await recorder.close();
  transport.close();
  await running.close();
});

const stored = () => running.emulator.events('default') as unknown as StoredEvent[];

describe('EventRecorder against the API server', () => {
  it('writes an Event the API server takes, and a series for repeats', async () => {
    recorder.record(occurrence);
    await clock.advance(60_000);
    recorder.record(occurrence);
    await clock.advance(60_000);
    recorder.record(occurrence);
    await recorder.flush();

    const [event, ...others] = stored();
    expect(others).toEqual([]);
    expect(event).toMatchObject({
      involvedObject: { kind: 'Node', name: 'node-a', uid: 'node-a' },
      reason: 'InvalidInventory',
      message: occurrence.note,
      type: 'Warning',
      reportingComponent: 'slicekeeper.dev/slice-syncer',
      reportingInstance: 'slice-syncer-7d9f-x2',
      // The third occurrence waits for the next series write.
      series: { count: 2 },
    });
    expect(requests).toEqual(['create events 201', 'patch events 200']);

    // The series write every 30 minutes brings the count up to date.
    await clock.advance(30 * 60_000);
    await recorder.flush();
    expect(stored()[0]?.series?.count).toBe(3);
  });

  it('creates the Event again, with its series, when someone deleted it', async () => {
    recorder.record(occurrence);
    await recorder.flush();
    const [first] = stored();
    const name = first?.metadata.name ?? '';
    await requestJson(running.url, 'DELETE', `/api/v1/namespaces/default/events/${name}`);
    recorder.record(occurrence);
    await recorder.flush();
    expect(stored()).toMatchObject([{ metadata: { name }, series: { count: 2 } }]);
    expect(requests).toEqual(['create events 201', 'patch events 404', 'create events 201']);
  });

  it('lets a quiet series end; the server forgets its Event an hour after the last write', async () => {
    recorder.record(occurrence);
    recorder.record(occurrence);
    await clock.advance(13 * 60_000);
    await recorder.flush();
    expect(stored()).toHaveLength(1);
    await clock.advance(60 * 60_000);
    expect(stored()).toEqual([]);
    // A new occurrence after the series ended is a new Event.
    recorder.record(occurrence);
    await recorder.flush();
    expect(stored()).toHaveLength(1);
    expect(stored()[0]?.series).toBeUndefined();
  });
});
