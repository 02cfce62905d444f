import { createNode as createNamedNode, NODES } from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * Node status as kube-apiserver 1.34 stores and answers it.
 *
 * - `NodeCondition`'s times are `metav1.Time` values with `omitempty` (`k8s.io/api/core/v1/
 *   types.go`); encoding/json never omits a struct, so an unset one is `null`.
 * - `SetDefaults_NodeStatus` (`pkg/apis/core/v1/defaults.go`): `allocatable` defaults to
 *   `capacity` when unset, on every decode (create, PUT /status).
 * - Strategic merge on `status.conditions` (patchMergeKey `type`,
 *   `staging/src/k8s.io/apimachinery/pkg/util/strategicpatch/patch.go`): `$setElementOrder`
 *   orders the merged list, `$patch: delete` removes the item with that key, a null list removes
 *   the field, and an item without the merge key is refused with strategicpatch's
 *   `ErrNoMergeKey` text, which the patch handler does not map to a Status (a 500 without a
 *   reason).
 * - Server-side apply on `/status` (`managedfields`, `pkg/registry/core/node/strategy.go`
 *   `GetResetFields`): conditions are a map keyed by `type`; a manager's apply removes only the
 *   conditions it owned and no longer applies; a conflict names the manager and the
 *   subresource; `force=true` takes the field over.
 */

const kube = new EmulatorUnderTest();
const call = kube.call.bind(kube);

beforeEach(() => kube.start());
afterEach(() => kube.close());

function statusOf(node: Json): { conditions?: Json[]; capacity?: Json; allocatable?: Json } {
  return node.status as { conditions?: Json[]; capacity?: Json; allocatable?: Json };
}

function types(node: Json): unknown[] {
  return (statusOf(node).conditions ?? []).map((c) => c.type);
}

function createNode(status: Json): Promise<Json> {
  return createNamedNode(kube, 'node-a', status);
}

function smp(patch: Json): Promise<{ status: number; body: Json }> {
  return call('PATCH', `${NODES}/node-a/status`, patch, 'application/strategic-merge-patch+json');
}

function applyStatus(
  manager: string,
  conditions: Json[],
  force = false,
): Promise<{ status: number; body: Json }> {
  return call(
    'PATCH',
    `${NODES}/node-a/status?fieldManager=${manager}${force ? '&force=true' : ''}`,
    { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' }, status: { conditions } },
    'application/apply-patch+yaml',
  );
}

describe('condition times and defaults', () => {
  it('answers unset condition times as null', async () => {
    await createNode({ conditions: [{ type: 'Ready', status: 'True' }] });
    const node = (await call('GET', `${NODES}/node-a`)).body;
    expect(statusOf(node).conditions).toEqual([
      { type: 'Ready', status: 'True', lastHeartbeatTime: null, lastTransitionTime: null },
    ]);
  });

  it('defaults allocatable from capacity on create and on PUT /status, and keeps a given one', async () => {
    const created = await createNode({ capacity: { cpu: '4' } });
    expect(statusOf(created).allocatable).toEqual({ cpu: '4' });
    const put = await call('PUT', `${NODES}/node-a/status`, {
      ...created,
      status: { capacity: { cpu: '8', memory: '1Gi' } },
    });
    expect(statusOf(put.body).allocatable).toEqual({ cpu: '8', memory: '1Gi' });
    const given = await call('PUT', `${NODES}/node-a/status`, {
      ...put.body,
      status: { capacity: { cpu: '8' }, allocatable: { cpu: '7500m' } },
    });
    expect(statusOf(given.body).allocatable).toEqual({ cpu: '7500m' });
  });
});

describe('strategic merge patches of conditions', () => {
  beforeEach(async () => {
    await createNode({
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'MemoryPressure', status: 'False' },
      ],
    });
  });

  it('merges by type in the order $setElementOrder gives', async () => {
    const patched = await smp({
      status: {
        ['$setElementOrder/conditions']: [
          { type: 'DiskPressure' },
          { type: 'MemoryPressure' },
          { type: 'Ready' },
        ],
        conditions: [{ type: 'DiskPressure', status: 'False' }],
      },
    });
    expect(patched.status).toBe(200);
    expect(types(patched.body)).toEqual(['DiskPressure', 'MemoryPressure', 'Ready']);
  });

  it('removes one condition with $patch: delete and all of them with null', async () => {
    const deleted = await smp({ status: { conditions: [{ type: 'Ready', $patch: 'delete' }] } });
    expect(types(deleted.body)).toEqual(['MemoryPressure']);
    const cleared = await smp({ status: { conditions: null } });
    expect(statusOf(cleared.body)).not.toHaveProperty('conditions');
  });

  it('refuses a condition without its merge key with strategicpatch’s text', async () => {
    const refused = await smp({ status: { conditions: [{ status: 'True' }] } });
    expect(refused.status).toBe(500);
    expect(refused.body).not.toHaveProperty('reason');
    expect(refused.body.message).toBe(
      'map: map[status:True] does not contain declared merge key: type',
    );
  });
});

describe('server-side apply of /status', () => {
  beforeEach(async () => {
    await createNode({ capacity: { cpu: '4' } });
  });

  it('removes only the conditions the manager owned and no longer applies', async () => {
    expect(
      (
        await applyStatus('kubelet', [
          { type: 'Ready', status: 'True' },
          { type: 'MemoryPressure', status: 'False' },
        ])
      ).status,
    ).toBe(200);
    expect(
      (await smp({ status: { conditions: [{ type: 'NetworkUnavailable', status: 'False' }] } }))
        .status,
    ).toBe(200);
    const reapplied = await applyStatus('kubelet', [{ type: 'Ready', status: 'True' }]);
    expect(reapplied.status).toBe(200);
    expect(types(reapplied.body).sort()).toEqual(['NetworkUnavailable', 'Ready']);
    expect(statusOf(reapplied.body).capacity).toEqual({ cpu: '4' });
  });

  it('names the owner and the subresource in a conflict, and force takes the field over', async () => {
    await applyStatus('kubelet', [{ type: 'Ready', status: 'True' }]);
    const conflict = await applyStatus('checker', [{ type: 'Ready', status: 'False' }]);
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({
      reason: 'Conflict',
      message:
        'Apply failed with 1 conflict: conflict with "kubelet" with subresource "status": .status.conditions[type="Ready"].status',
      details: {
        causes: [
          {
            reason: 'FieldManagerConflict',
            message: 'conflict with "kubelet" with subresource "status"',
            field: '.status.conditions[type="Ready"].status',
          },
        ],
      },
    });
    const forced = await applyStatus('checker', [{ type: 'Ready', status: 'False' }], true);
    expect(forced.status).toBe(200);
    expect(statusOf(forced.body).conditions?.[0]).toMatchObject({ type: 'Ready', status: 'False' });
    const managers = ((forced.body.metadata as Json).managedFields as Json[]).map(
      (e) =>
        `${e.manager as string}/${e.operation as string}/${typeof e.subresource === 'string' ? e.subresource : ''}`,
    );
    expect(managers).toContain('checker/Apply/status');
  });
});
