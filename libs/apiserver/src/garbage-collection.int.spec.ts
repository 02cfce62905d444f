import { createNode, resourceSlice, SLICES } from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * Dependents whose owner does not exist, collected as kube-controller-manager's garbage
 * collector does (`pkg/controller/garbagecollector/garbagecollector.go`): an owner reference
 * that the graph has not seen becomes a virtual node, `attemptToDeleteItem` looks the owner up
 * through the API by name, and `isDangling` counts it as absent when it is missing or has another
 * uid; a dependent left without a solid owner is deleted (`classifyReferences`), one that still
 * has a solid owner is patched to drop the dangling references.
 */

const kube = new EmulatorUnderTest();
const call = kube.call.bind(kube);

beforeEach(() => kube.start());
afterEach(() => kube.close());

function nodeRef(name: string, uid: string): Json {
  return { apiVersion: 'v1', kind: 'Node', name, uid, controller: true };
}

function slice(name: string, ownerReferences: Json[]): Json {
  return resourceSlice(name, { metadata: { ownerReferences } });
}

async function createNodeUid(name: string): Promise<string> {
  return ((await createNode(kube, name)).metadata as Json).uid as string;
}

async function listRv(): Promise<string> {
  return ((await call('GET', SLICES)).body.metadata as Json).resourceVersion as string;
}

/** Creates slices, then waits for the next `count` slice events. */
async function createAndWatch(slices: Json[], count: number): Promise<string[]> {
  const rv = await listRv();
  const watching = kube.firstWatchEvents(`${SLICES}?watch=true&resourceVersion=${rv}`, count);
  for (const s of slices) expect((await call('POST', SLICES, s)).status).toBe(201);
  const events = await watching;
  return events.map(
    (e) => `${e.type as string} ${((e.object as Json).metadata as Json).name as string}`,
  );
}

describe('dangling owner references', () => {
  it('collects a slice owned by a Node that never existed', async () => {
    const events = await createAndWatch([slice('orphan', [nodeRef('ghost', 'uid-ghost')])], 2);
    expect(events).toEqual(['ADDED orphan', 'DELETED orphan']);
    expect((await call('GET', `${SLICES}/orphan`)).status).toBe(404);
  });

  it('collects a slice whose owner uid is not the live Node’s, and keeps a correctly owned one', async () => {
    const uid = await createNodeUid('node-a');
    const events = await createAndWatch(
      [
        slice('owned', [nodeRef('node-a', uid)]),
        slice('stale', [nodeRef('node-a', 'uid-of-an-earlier-node-a')]),
      ],
      3,
    );
    expect(events).toEqual(['ADDED owned', 'ADDED stale', 'DELETED stale']);
    expect((await call('GET', `${SLICES}/owned`)).status).toBe(200);
  });

  it('drops only the dangling reference of a slice that still has a live owner', async () => {
    const uid = await createNodeUid('node-a');
    const events = await createAndWatch(
      [
        slice('shared', [
          nodeRef('node-a', uid),
          { ...nodeRef('ghost', 'uid-ghost'), controller: false },
        ]),
      ],
      2,
    );
    expect(events).toEqual(['ADDED shared', 'MODIFIED shared']);
    const live = await call('GET', `${SLICES}/shared`);
    expect((live.body.metadata as Json).ownerReferences).toEqual([nodeRef('node-a', uid)]);
  });

  it('collects a slice patched to reference a missing Node', async () => {
    const uid = await createNodeUid('node-a');
    expect((await call('POST', SLICES, slice('moved', [nodeRef('node-a', uid)]))).status).toBe(201);
    const rv = await listRv();
    const watching = kube.firstWatchEvents(`${SLICES}?watch=true&resourceVersion=${rv}`, 2);
    const patched = await call(
      'PATCH',
      `${SLICES}/moved`,
      { metadata: { ownerReferences: [nodeRef('node-b', 'uid-b')] } },
      'application/merge-patch+json',
    );
    expect(patched.status).toBe(200);
    expect((await watching).map((e) => e.type)).toEqual(['MODIFIED', 'DELETED']);
  });
});
