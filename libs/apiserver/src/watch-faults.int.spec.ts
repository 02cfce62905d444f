import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';

/**
 * The two watch faults informers must survive, as the emulator produces them: a watch the
 * server ends (its timeout, a restart) and a resourceVersion compacted away (410 Expired).
 */

type Json = Record<string, unknown>;

const SLICES = '/apis/resource.k8s.io/v1/resourceslices';

let running: RunningKubeEmulator;

beforeEach(async () => {
  running = await startKubeEmulator({ port: 0 });
});

afterEach(async () => {
  await running.close();
});

function slice(name: string): Json {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name },
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
    },
  };
}

async function create(name: string): Promise<string> {
  const res = await fetch(`${running.url}${SLICES}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(slice(name)),
  });
  const body = (await res.json()) as { metadata: { resourceVersion: string } };
  return body.metadata.resourceVersion;
}

/** Opens a watch; `events()` reads it to its end. */
async function openWatch(query: string): Promise<{ events: () => Promise<Json[]> }> {
  const res = await fetch(`${running.url}${SLICES}?watch=true&timeoutSeconds=60&${query}`);
  return {
    events: async () =>
      (await res.text())
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Json),
  };
}

describe('watch faults', () => {
  it('cutWatches() ends every open watch cleanly, as a timeout does, and a resume loses nothing', async () => {
    const rv = await create('a');
    const first = await openWatch(`resourceVersion=${rv}`);
    const second = await openWatch(`resourceVersion=${rv}`);
    expect(running.emulator.watchCount()).toBe(2);

    expect(running.emulator.cutWatches()).toBe(2);
    // A complete response with no ERROR event: the client resumes from its last version.
    expect(await first.events()).toEqual([]);
    expect(await second.events()).toEqual([]);
    expect(running.emulator.watchCount()).toBe(0);

    await create('b');
    const resumed = await openWatch(`resourceVersion=${rv}`);
    // What happened since `rv` is replayed as the watch starts; then end it.
    running.emulator.cutWatches();
    const events = await resumed.events();
    expect(events.map((e) => [e.type, (e.object as { metadata: Json }).metadata.name])).toEqual([
      ['ADDED', 'b'],
    ]);
  });

  it('POST /_emulator/cut-watches does the same for other processes', async () => {
    const rv = await create('a');
    const watch = await openWatch(`resourceVersion=${rv}`);
    const res = await fetch(`${running.url}/_emulator/cut-watches`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, watches: 1 });
    expect(await watch.events()).toEqual([]);
  });

  it("answers a resume from a compacted version with kube-apiserver's 410 Expired ERROR event", async () => {
    const rv = await create('a');
    await create('b');
    running.emulator.forgetHistory();
    const watch = await openWatch(`resourceVersion=${rv}`);
    const events = await watch.events();
    expect(events).toEqual([
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: expect.stringMatching(/^too old resource version: \d+ \(\d+\)$/) as unknown,
          reason: 'Expired',
          code: 410,
        },
      },
    ]);
  });
});
