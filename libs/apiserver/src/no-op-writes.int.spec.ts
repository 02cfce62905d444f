import {
  createNode as createNamedNode,
  NODES,
  READY_CONDITION,
  resourceSlice,
  SLICES,
} from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * A write that changes nothing stores nothing, as kube-apiserver's storage does: etcd3's
 * `GuaranteedUpdate` (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go`) skips the
 * write when the new object's bytes equal the stored ones (`!origState.stale &&
 * bytes.Equal(data, origState.data)`) and answers the current object, so the resourceVersion
 * stays, no watch event is sent, and managedFields are untouched (the field manager,
 * `managedfields/internal/managedfieldsupdater.go`, stamps a manager's time only when it took
 * fields). The strategies bump `metadata.generation` only when the spec changed
 * (`pkg/registry/resource/resourceslice/strategy.go` `PrepareForUpdate`, comparing before
 * `dropDisabledFields`), so an update that only adds fields of a disabled gate still bumps it.
 */

const kube = new EmulatorUnderTest({ release: '1.34' });
const call = kube.call.bind(kube);

beforeEach(() => kube.start());
afterEach(() => kube.close());

function meta(object: Json): Json {
  return object.metadata as Json;
}

function slice(name: string): Json {
  return resourceSlice(name, {
    metadata: { labels: { tier: 'gold' } },
    spec: { devices: [{ name: 'gpu-0', attributes: { model: { string: 'a100' } } }] },
  });
}

async function createSlice(name: string): Promise<Json> {
  const created = await call('POST', SLICES, slice(name));
  expect(created.status).toBe(201);
  return created.body;
}

function createNode(name: string): Promise<Json> {
  return createNamedNode(kube, name, { capacity: { cpu: '8' }, conditions: [READY_CONDITION] });
}

/** The server's current resourceVersion, as a list of the collection reports it. */
async function currentResourceVersion(collection: string): Promise<unknown> {
  const listed = await call('GET', collection);
  return meta(listed.body).resourceVersion;
}

/**
 * Asserts that `write` answered the stored object unchanged and that nothing was written: the
 * collection's resourceVersion is still the object's, and the first event a watch from it sees
 * is the label change made afterwards, not the no-op.
 */
async function expectNothingWritten(
  collection: string,
  path: string,
  before: Json,
  write: { status: number; body: Json },
): Promise<void> {
  expect(write.status).toBe(200);
  expect(meta(write.body).resourceVersion).toBe(meta(before).resourceVersion);
  expect(meta(write.body).generation).toBe(meta(before).generation);
  expect(meta(write.body).managedFields).toEqual(meta(before).managedFields);
  expect(await currentResourceVersion(collection)).toBe(meta(before).resourceVersion);
  const labelled = await call(
    'PATCH',
    path,
    { metadata: { labels: { touched: 'yes' } } },
    'application/merge-patch+json',
  );
  expect(labelled.status).toBe(200);
  const events = await kube.firstWatchEvents(
    `${collection}?watch=true&resourceVersion=${String(meta(before).resourceVersion)}`,
    1,
    { headers: { Accept: 'application/json' } },
  );
  expect(events.map((e) => [e.type, meta(e.object as Json).resourceVersion])).toEqual([
    ['MODIFIED', meta(labelled.body).resourceVersion],
  ]);
}

describe('a write that changes nothing stores nothing', () => {
  it('put-unchanged: a PUT of the stored object keeps its resourceVersion', async () => {
    const created = await createSlice('s-put');
    const put = await call('PUT', `${SLICES}/s-put`, {
      ...slice('s-put'),
      metadata: { ...meta(slice('s-put')), resourceVersion: meta(created).resourceVersion },
    });
    await expectNothingWritten(SLICES, `${SLICES}/s-put`, created, put);
  });

  it('put-unchanged-by-another-manager: the other manager takes no fields', async () => {
    const created = await createSlice('s-other');
    const put = await call('PUT', `${SLICES}/s-other?fieldManager=someone-else`, slice('s-other'));
    await expectNothingWritten(SLICES, `${SLICES}/s-other`, created, put);
  });

  it('merge-patch-same-values: a merge patch restating the spec writes nothing', async () => {
    const created = await createSlice('s-merge');
    const patched = await call(
      'PATCH',
      `${SLICES}/s-merge`,
      { metadata: { labels: { tier: 'gold' } }, spec: slice('s-merge').spec },
      'application/merge-patch+json',
    );
    await expectNothingWritten(SLICES, `${SLICES}/s-merge`, created, patched);
  });

  it('strategic-merge-patch-same-values: writes nothing', async () => {
    const created = await createSlice('s-smp');
    const patched = await call(
      'PATCH',
      `${SLICES}/s-smp`,
      { spec: { pool: { generation: 1 } } },
      'application/strategic-merge-patch+json',
    );
    await expectNothingWritten(SLICES, `${SLICES}/s-smp`, created, patched);
  });

  it('json-patch-test-only: a JSON patch of only passing tests writes nothing', async () => {
    const created = await createSlice('s-json');
    const patched = await call(
      'PATCH',
      `${SLICES}/s-json`,
      [{ op: 'test', path: '/spec/driver', value: 'gpu.example.com' }],
      'application/json-patch+json',
    );
    await expectNothingWritten(SLICES, `${SLICES}/s-json`, created, patched);
  });

  it('apply-same-configuration: re-applying what the manager applied writes nothing', async () => {
    const applied = await call(
      'PATCH',
      `${SLICES}/s-apply?fieldManager=driver`,
      slice('s-apply'),
      'application/apply-patch+yaml',
    );
    expect(applied.status).toBe(201);
    const again = await call(
      'PATCH',
      `${SLICES}/s-apply?fieldManager=driver`,
      slice('s-apply'),
      'application/apply-patch+yaml',
    );
    await expectNothingWritten(SLICES, `${SLICES}/s-apply`, applied.body, again);
  });

  it('older-version-put-unchanged: a PUT through v1beta1 of the same object writes nothing', async () => {
    const created = await createSlice('s-beta');
    const read = await call('GET', `/apis/resource.k8s.io/v1beta1/resourceslices/s-beta`);
    expect(read.status).toBe(200);
    const put = await call('PUT', `/apis/resource.k8s.io/v1beta1/resourceslices/s-beta`, read.body);
    await expectNothingWritten(SLICES, `${SLICES}/s-beta`, created, put);
  });

  it('status-put-unchanged: a PUT of a Node status that changes nothing', async () => {
    const created = await createNode('node-put');
    const put = await call('PUT', `${NODES}/node-put/status`, created);
    await expectNothingWritten(NODES, `${NODES}/node-put`, created, put);
  });

  it('status-strategic-merge-patch-same-condition: a heartbeat that repeats itself', async () => {
    const created = await createNode('node-smp');
    const status = created.status as { conditions: Json[] };
    const patched = await call(
      'PATCH',
      `${NODES}/node-smp/status`,
      { status: { conditions: status.conditions } },
      'application/strategic-merge-patch+json',
    );
    await expectNothingWritten(NODES, `${NODES}/node-smp`, created, patched);
  });
});

describe('a write that changes something', () => {
  it('disabled-gate-fields-bump-generation: adding only taints with DRADeviceTaints off', async () => {
    // 1.34's default gates: DRADeviceTaints is alpha and off, so the taints are dropped, but the
    // strategy compared the specs before dropping them.
    const created = await createSlice('s-taint');
    const body = slice('s-taint');
    const spec = body.spec as { devices: Json[] };
    const devices = spec.devices.map((d) => ({
      ...d,
      taints: [{ key: 'example.com/unhealthy', effect: 'NoSchedule' }],
    }));
    const put = await call('PUT', `${SLICES}/s-taint`, { ...body, spec: { ...spec, devices } });
    expect(put.status).toBe(200);
    expect(meta(put.body).generation).toBe(2);
    expect(meta(put.body).resourceVersion).not.toBe(meta(created).resourceVersion);
    expect(put.body.spec).toEqual(created.spec);
  });

  it('label-only-change: a new resourceVersion, the same generation', async () => {
    const created = await createSlice('s-label');
    const patched = await call(
      'PATCH',
      `${SLICES}/s-label`,
      { metadata: { labels: { tier: 'silver' } } },
      'application/merge-patch+json',
    );
    expect(patched.status).toBe(200);
    expect(meta(patched.body).generation).toBe(1);
    expect(meta(patched.body).resourceVersion).not.toBe(meta(created).resourceVersion);
  });
});
