import { resourceSlice, SLICES } from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * The two watch faults informers must survive, as the emulator produces them: a watch the
 * server ends (its timeout, a restart) and a resourceVersion compacted away (410 Expired).
 */

const kube = new EmulatorUnderTest();

beforeEach(() => kube.start());
afterEach(() => kube.close());

async function create(name: string): Promise<string> {
  const created = await kube.call('POST', SLICES, resourceSlice(name));
  return (created.body.metadata as Json).resourceVersion as string;
}

/** Opens a watch; `events()` reads it to its end. */
async function openWatch(query: string): Promise<{ events: () => Promise<Json[]> }> {
  const res = await fetch(`${kube.url}${SLICES}?watch=true&timeoutSeconds=60&${query}`);
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
    expect(kube.emulator.watchCount()).toBe(2);

    expect(kube.emulator.cutWatches()).toBe(2);
    // A complete response with no ERROR event: the client resumes from its last version.
    expect(await first.events()).toEqual([]);
    expect(await second.events()).toEqual([]);
    expect(kube.emulator.watchCount()).toBe(0);

    await create('b');
    const resumed = await openWatch(`resourceVersion=${rv}`);
    // What happened since `rv` is replayed as the watch starts; then end it.
    kube.emulator.cutWatches();
    const events = await resumed.events();
    expect(events.map((e) => [e.type, (e.object as { metadata: Json }).metadata.name])).toEqual([
      ['ADDED', 'b'],
    ]);
  });

  it('POST /_emulator/cut-watches does the same for other processes', async () => {
    const rv = await create('a');
    const watch = await openWatch(`resourceVersion=${rv}`);
    const res = await fetch(`${kube.url}/_emulator/cut-watches`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, watches: 1 });
    expect(await watch.events()).toEqual([]);
  });

  it("answers a resume from a compacted version with kube-apiserver's 410 Expired ERROR event", async () => {
    const rv = await create('a');
    await create('b');
    kube.emulator.forgetHistory();
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
