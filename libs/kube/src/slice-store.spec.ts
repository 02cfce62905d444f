import type { StoredResourceSlice } from '@slicekeeper/slices';
import { SliceStore } from './slice-store';

const GPU = 'gpu.example.com';
const NET = 'net.example.com';
const NODE_A = { node: 'node-a', driver: GPU };

interface SliceFixture {
  rv: number;
  uid?: string;
  node?: string;
  driver?: string;
  pool?: string;
  generation?: number;
}

/** A managed slice as the API server returns it. */
function slice(name: string, fixture: SliceFixture): StoredResourceSlice {
  const node = fixture.node ?? 'node-a';
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: {
      name,
      uid: fixture.uid ?? `uid-${name}`,
      resourceVersion: String(fixture.rv),
      labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' },
    },
    spec: {
      driver: fixture.driver ?? GPU,
      pool: {
        name: fixture.pool ?? node,
        generation: fixture.generation ?? 1,
        resourceSliceCount: 1,
      },
      ...(node === '' ? { allNodes: true } : { nodeName: node }),
      devices: [],
    },
  };
}

/** name@resourceVersion of each slice, the way assertions read best. */
function versions(slices: readonly StoredResourceSlice[]): string[] {
  return slices.map((s) => `${s.metadata.name}@${s.metadata.resourceVersion}`);
}

let now: number;
let store: SliceStore;

beforeEach(() => {
  now = Date.parse('2026-01-01T00:00:00Z');
  store = new SliceStore({ clock: { now: () => now }, mutationTtlMs: 60_000 });
  store.replace([], '10', true);
});

describe('SliceStore: our writes over a lagging watch (mutation cache)', () => {
  it('create-recorded-watch-lagging: the view includes the created slice', () => {
    store.recordWrite(slice('a', { rv: 11 }));
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@11']);
    expect(store.keys()).toEqual([NODE_A]);
  });

  it('watch-catches-up: one copy, and the echo is not a foreign change', () => {
    store.recordWrite(slice('a', { rv: 11 }));
    expect(store.apply('ADDED', slice('a', { rv: 11 }))).toBeUndefined();
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@11']);
  });

  it('older-event-after-our-write: the watch does not win with an older version', () => {
    store.replace([slice('a', { rv: 5 })], '10');
    store.recordWrite(slice('a', { rv: 12, generation: 2 }));
    // Someone's change at 11 arrives after our update at 12 was recorded.
    expect(store.apply('MODIFIED', slice('a', { rv: 11 }))).toEqual({
      key: NODE_A,
      type: 'MODIFIED',
      name: 'a',
      uid: 'uid-a',
    });
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@12']);
    expect(store.slicesOf(NODE_A)[0]?.spec.pool.generation).toBe(2);
    expect(store.apply('MODIFIED', slice('a', { rv: 12, generation: 2 }))).toBeUndefined();
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@12']);
  });

  it('newer-event-than-our-write: the watch wins and the write is dropped', () => {
    store.recordWrite(slice('a', { rv: 11 }));
    store.apply('MODIFIED', slice('a', { rv: 13, generation: 3 }));
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@13']);
  });

  it('bookmark-past-our-write: the watch has the final word (deleted meanwhile by someone)', () => {
    store.recordWrite(slice('a', { rv: 11 }));
    store.observe('11');
    expect(store.slicesOf(NODE_A)).toEqual([]);
  });

  it('compares resourceVersions as integers, not as strings', () => {
    store.replace([slice('a', { rv: 9 })], '9');
    store.recordWrite(slice('a', { rv: 10 }));
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@10']);
  });

  it('late-older-write: a write recorded after a newer one does not replace it', () => {
    store.recordWrite(slice('a', { rv: 14, generation: 2 }));
    store.recordWrite(slice('a', { rv: 12 }));
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@14']);
    // Both events are ours.
    expect(store.apply('ADDED', slice('a', { rv: 12 }))).toBeUndefined();
    expect(store.apply('MODIFIED', slice('a', { rv: 14, generation: 2 }))).toBeUndefined();
  });

  it('delete-recorded: hidden even while the watch still has it, until its DELETED', () => {
    store.replace([slice('a', { rv: 5 }), slice('b', { rv: 6 })], '10');
    store.recordDelete({ name: 'a', uid: 'uid-a', resourceVersion: '5' });
    expect(versions(store.slicesOf(NODE_A))).toEqual(['b@6']);
    expect(store.apply('DELETED', slice('a', { rv: 11 }))).toBeUndefined();
    expect(versions(store.slicesOf(NODE_A))).toEqual(['b@6']);
  });

  it('delete-refused: a recorded delete the API server refused shows the slice again', () => {
    store.replace([slice('a', { rv: 5 })], '10');
    store.recordDelete({ name: 'a', uid: 'uid-a', resourceVersion: '5' });
    expect(store.slicesOf(NODE_A)).toEqual([]);
    store.forgetDelete('a');
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@5']);
    // Its deletion by someone else later is theirs.
    expect(store.apply('DELETED', slice('a', { rv: 11 }))).toEqual({
      key: NODE_A,
      type: 'DELETED',
      name: 'a',
      uid: 'uid-a',
    });
  });

  it('delete-of-a-create-the-watch-never-showed: the lagging ADDED stays hidden', () => {
    store.recordWrite(slice('a', { rv: 11 }));
    store.recordDelete({ name: 'a', uid: 'uid-a', resourceVersion: '11' });
    expect(store.slicesOf(NODE_A)).toEqual([]);
    expect(store.apply('ADDED', slice('a', { rv: 11 }))).toBeUndefined();
    expect(store.slicesOf(NODE_A)).toEqual([]);
    expect(store.apply('DELETED', slice('a', { rv: 12 }))).toBeUndefined();
    expect(store.keys()).toEqual([]);
  });

  it('recreated-under-the-same-name: an object with a new UID shows', () => {
    store.replace([slice('a', { rv: 5 })], '10');
    store.recordDelete({ name: 'a', uid: 'uid-a', resourceVersion: '5' });
    store.apply('DELETED', slice('a', { rv: 11 }));
    expect(store.apply('ADDED', slice('a', { rv: 12, uid: 'uid-a2' }))).toEqual({
      key: NODE_A,
      type: 'ADDED',
      name: 'a',
      uid: 'uid-a2',
    });
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@12']);
  });

  it('expires recorded writes and deletes after the TTL', () => {
    store.replace([slice('b', { rv: 5 })], '10');
    store.recordWrite(slice('a', { rv: 11 }));
    store.recordDelete({ name: 'b', uid: 'uid-b', resourceVersion: '5' });
    now += 59_999;
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@11']);
    now += 1;
    expect(versions(store.slicesOf(NODE_A))).toEqual(['b@5']);
    // An echo that comes after the TTL is no longer recognised.
    expect(store.apply('ADDED', slice('a', { rv: 11 }))).toBeDefined();
  });
});

describe('SliceStore: foreign changes', () => {
  it.each([
    ['ADDED', slice('x', { rv: 11 })],
    ['MODIFIED', slice('a', { rv: 11 })],
    ['DELETED', slice('a', { rv: 11 })],
  ] as const)('reports a %s nobody recorded, with the slice key', (type, changed) => {
    store.replace([slice('a', { rv: 5 })], '10');
    expect(store.apply(type, changed)).toEqual({
      key: NODE_A,
      type,
      name: changed.metadata.name,
      uid: changed.metadata.uid,
    });
  });

  it('reports the deletion of a slice we deleted under another UID', () => {
    store.replace([slice('a', { rv: 5, uid: 'new' })], '10');
    store.recordDelete({ name: 'a', uid: 'old', resourceVersion: '4' });
    expect(store.apply('DELETED', slice('a', { rv: 11, uid: 'new' }))).toMatchObject({
      type: 'DELETED',
    });
  });
});

describe('SliceStore: indexes', () => {
  it('indexes by key, a cluster-scoped pool under node ""', () => {
    store.replace(
      [
        slice('a', { rv: 5 }),
        slice('b', { rv: 6, driver: NET }),
        slice('c', { rv: 7, node: 'node-b' }),
        slice('f', { rv: 8, node: '', pool: 'fabric' }),
      ],
      '10',
    );
    expect(versions(store.slicesOf(NODE_A))).toEqual(['a@5']);
    expect(versions(store.slicesOf({ node: 'node-a', driver: NET }))).toEqual(['b@6']);
    expect(versions(store.slicesOf({ node: '', driver: GPU }))).toEqual(['f@8']);
    expect(store.slicesOf({ node: 'node-c', driver: GPU })).toEqual([]);
    expect(store.keys()).toHaveLength(4);
    expect(store.keys()).toContainEqual({ node: '', driver: GPU });
  });

  it('indexes by pool (driver and pool name), our writes included', () => {
    store.replace(
      [slice('a', { rv: 5, pool: 'p' }), slice('b', { rv: 6, driver: NET, pool: 'p' })],
      '10',
    );
    store.recordWrite(slice('c', { rv: 11, node: 'node-b', pool: 'p' }));
    expect(versions(store.slicesOfPool(GPU, 'p'))).toEqual(['a@5', 'c@11']);
    expect(versions(store.slicesOfPool(NET, 'p'))).toEqual(['b@6']);
  });

  it('drops a key once its last slice is gone', () => {
    store.replace([slice('a', { rv: 5 })], '10');
    store.apply('DELETED', slice('a', { rv: 11 }));
    expect(store.keys()).toEqual([]);
  });
});

describe('SliceStore: relist (anti-entropy)', () => {
  it('reports what the watch missed, leaving out our own writes and deletes', () => {
    store.replace(
      [
        slice('same', { rv: 5 }),
        slice('changed', { rv: 6 }),
        slice('gone', { rv: 7 }),
        slice('ours-deleted', { rv: 8 }),
      ],
      '10',
    );
    store.recordWrite(slice('ours-created', { rv: 12 }));
    store.recordDelete({ name: 'ours-deleted', uid: 'uid-ours-deleted', resourceVersion: '8' });
    const result = store.replace(
      [
        slice('same', { rv: 5 }),
        slice('changed', { rv: 13 }),
        slice('new', { rv: 14, node: 'node-b' }),
        slice('ours-created', { rv: 12 }),
      ],
      '15',
    );
    expect(result).toEqual({
      added: 1,
      changed: 1,
      removed: 1,
      changes: [
        { key: NODE_A, type: 'MODIFIED', name: 'changed', uid: 'uid-changed' },
        { key: { node: 'node-b', driver: GPU }, type: 'ADDED', name: 'new', uid: 'uid-new' },
        { key: NODE_A, type: 'DELETED', name: 'gone', uid: 'uid-gone' },
      ],
    });
    expect(versions(store.slicesOf(NODE_A))).toEqual(['changed@13', 'ours-created@12', 'same@5']);
  });

  it('reports our created slice as deleted when the list shows someone removed it', () => {
    store.recordWrite(slice('a', { rv: 11 }));
    const result = store.replace([], '15');
    expect(result.changes).toEqual([{ key: NODE_A, type: 'DELETED', name: 'a', uid: 'uid-a' }]);
    expect(store.slicesOf(NODE_A)).toEqual([]);
  });

  it('reports nothing for the first list', () => {
    const first = new SliceStore({ clock: { now: () => now } });
    expect(first.replace([slice('a', { rv: 5 })], '10', true)).toEqual({
      added: 0,
      changed: 0,
      removed: 0,
      changes: [],
    });
  });
});

describe('SliceStore: how a traced write learns of its watch echo', () => {
  /** An echo watch that remembers how it ended. */
  function echo() {
    const ends: string[] = [];
    return { ends, watch: { end: (outcome: string) => ends.push(outcome) } };
  }

  it.each([
    [
      'echo-received: its event arrives',
      () => store.apply('ADDED', slice('a', { rv: 11 })),
      'received',
    ],
    [
      'echo-by-relist: a relist finds it',
      () => store.replace([slice('a', { rv: 11 })], '11'),
      'received',
    ],
    [
      'echo-missed-ttl: the entry expires unseen',
      () => {
        now += 61_000;
        store.slicesOf(NODE_A);
      },
      'missed',
    ],
    [
      'echo-missed-gone: a relist shows someone deleted it',
      () => store.replace([], '12'),
      'missed',
    ],
    [
      'echo-closed: the cache closes first',
      () => {
        store.abandonEchoes();
      },
      'closed',
    ],
  ])('%s', (_, then, outcome) => {
    const { ends, watch } = echo();
    store.recordWrite(slice('a', { rv: 11 }), watch);
    expect(ends).toEqual([]);
    then();
    expect(ends).toEqual([outcome]);
    // Told once: nothing later ends it again.
    store.abandonEchoes();
    expect(ends).toEqual([outcome]);
  });

  it('echo-early: the watch delivered the write before its answer was recorded', () => {
    const { ends, watch } = echo();
    store.apply('ADDED', slice('a', { rv: 11 }));
    store.recordWrite(slice('a', { rv: 11 }), watch);
    expect(ends).toEqual(['early']);
  });
});
