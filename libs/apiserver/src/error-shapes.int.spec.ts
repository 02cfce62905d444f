import { failureStatus, METHOD_NOT_ALLOWED } from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * The Status bodies of kube-apiserver 1.34's errors, for every resource discovery lists.
 *
 * - NotFound names the resource and object: the store's `storeerr.InterpretGetError` →
 *   `errors.NewNotFound(qualifiedResource, name)` (`staging/src/k8s.io/apiserver/pkg/registry/
 *   generic/registry/store.go`, `apimachinery/pkg/api/errors/errors.go`): `<resource>.<group>
 *   "x" not found`, details `{name, group, kind: <resource>}`, through every served version.
 * - A method a path does not take is go-restful's 405, through the server's
 *   `serviceErrorHandler` (`staging/src/k8s.io/apiserver/pkg/server/handler.go`):
 *   `NewGenericServerResponse(405, …)` with empty details; a path no route has is the same
 *   handler's 404 "the server could not find the requested resource".
 * - A 422 carries every field error as a cause, in the order validation found them
 *   (`errors.NewInvalid`; `pkg/apis/resource/validation/validation.go` `ValidateResourceSlice`:
 *   metadata, then driver, pool, node selection, devices item by item).
 */

const kube = new EmulatorUnderTest();
const call = kube.call.bind(kube);

beforeAll(() => kube.start());
afterAll(() => kube.close());

interface Listed {
  groupVersion: string;
  group: string;
  resource: string;
  namespaced: boolean;
}

/** Every resource (no subresources) that discovery lists with a `get`, in every version. */
async function gettableResources(): Promise<Listed[]> {
  const groups = (await call('GET', '/apis')).body.groups as {
    versions: { groupVersion: string }[];
  }[];
  const versions = ['v1', ...groups.flatMap((g) => g.versions.map((v) => v.groupVersion))];
  const listed: Listed[] = [];
  for (const groupVersion of versions) {
    const answer = await call('GET', groupVersion === 'v1' ? '/api/v1' : `/apis/${groupVersion}`);
    if (answer.status !== 200) continue;
    const resources = answer.body.resources as {
      name: string;
      namespaced: boolean;
      verbs: string[];
    }[];
    for (const r of resources) {
      if (r.name.includes('/') || !r.verbs.includes('get')) continue;
      const group = groupVersion.includes('/') ? (groupVersion.split('/')[0] ?? '') : '';
      listed.push({ groupVersion, group, resource: r.name, namespaced: r.namespaced });
    }
  }
  return listed;
}

function objectPath(r: Listed, name: string): string {
  const root = r.groupVersion === 'v1' ? '/api/v1' : `/apis/${r.groupVersion}`;
  return `${root}${r.namespaced ? '/namespaces/default' : ''}/${r.resource}/${name}`;
}

describe('NotFound', () => {
  it('names the resource and object for every kind discovery lists, in every served version', async () => {
    const listed = await gettableResources();
    expect(listed.map((r) => `${r.groupVersion} ${r.resource}`)).toEqual(
      expect.arrayContaining([
        'v1 nodes',
        'v1 events',
        'v1 configmaps',
        'events.k8s.io/v1 events',
        'resource.k8s.io/v1 resourceslices',
        'resource.k8s.io/v1beta1 resourceslices',
        'resource.k8s.io/v1beta2 resourceslices',
        'resource.k8s.io/v1 deviceclasses',
      ]),
    );
    for (const r of listed) {
      const answer = await call('GET', objectPath(r, 'missing'));
      const qualified = r.group === '' ? r.resource : `${r.resource}.${r.group}`;
      expect({ path: objectPath(r, 'missing'), status: answer.status, body: answer.body }).toEqual({
        path: objectPath(r, 'missing'),
        status: 404,
        body: failureStatus(404, `${qualified} "missing" not found`, {
          reason: 'NotFound',
          details: {
            name: 'missing',
            ...(r.group === '' ? {} : { group: r.group }),
            kind: r.resource,
          },
        }),
      });
    }
  });

  it('names the resource for a delete, a patch and a PUT of a missing ResourceSlice', async () => {
    const path = '/apis/resource.k8s.io/v1beta2/resourceslices/gone';
    for (const [method, body] of [
      ['DELETE', undefined],
      ['PATCH', {}],
      [
        'PUT',
        {
          apiVersion: 'resource.k8s.io/v1beta2',
          kind: 'ResourceSlice',
          metadata: { name: 'gone' },
        },
      ],
    ] as const) {
      const res = await fetch(`${kube.url}${path}`, {
        method,
        headers: {
          'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json',
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({
        message: 'resourceslices.resource.k8s.io "gone" not found',
        details: { name: 'gone', group: 'resource.k8s.io', kind: 'resourceslices' },
      });
    }
  });
});

describe('NotFound of a Namespace', () => {
  // The emulator stores no Namespace objects: only the four a new cluster has exist.
  it('names a namespace that does not exist, and does not claim a system one is missing', async () => {
    const missing = await call('GET', '/api/v1/namespaces/nope');
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('namespaces "nope" not found');
    const system = await call('GET', '/api/v1/namespaces/kube-system');
    expect(system.body.message).not.toBe('namespaces "kube-system" not found');
  });
});

describe('MethodNotAllowed', () => {
  it.each([
    ['GET', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews'],
    ['DELETE', '/apis/authorization.k8s.io/v1/subjectaccessreviews'],
    ['GET', '/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews'],
    ['POST', '/api/v1/nodes/n1/status'],
    ['DELETE', '/api/v1/nodes/n1/status'],
    ['PUT', '/api/v1/nodes'],
    ['POST', '/apis/resource.k8s.io/v1/resourceslices/s1'],
    ['POST', '/api/v1/namespaces/default/pods/p1/log'],
  ])('answers %s %s with 405', async (method, path) => {
    const answer = await call(
      method,
      path,
      method === 'GET' || method === 'DELETE' ? undefined : {},
    );
    expect(answer).toEqual({ status: 405, body: METHOD_NOT_ALLOWED });
  });

  it.each([
    ['a named review', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x'],
    [
      'a status of ResourceSlices, which have none',
      '/apis/resource.k8s.io/v1/resourceslices/s1/status',
    ],
  ])('answers a path no route has, %s, with the generic 404', async (_what, path) => {
    const answer = await call('GET', path);
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({
      message: 'the server could not find the requested resource',
      reason: 'NotFound',
      details: {},
    });
  });
});

describe('Invalid', () => {
  it('lists every field error as a cause, in the order validation finds them', async () => {
    const answer = await call('POST', '/apis/resource.k8s.io/v1/resourceslices', {
      metadata: { name: 'Bad_Name' },
      spec: {
        driver: 'Bad_Driver',
        pool: { name: '', generation: -1, resourceSliceCount: 0 },
        devices: [{ name: 'A' }, { name: 'A' }],
      },
    });
    expect(answer.status).toBe(422);
    const details = answer.body.details as { causes: Json[] };
    expect(details.causes.map((c) => [c.reason, c.field])).toEqual([
      ['FieldValueInvalid', 'metadata.name'],
      ['FieldValueInvalid', 'spec.driver'],
      ['FieldValueRequired', 'spec.pool.name'],
      ['FieldValueInvalid', 'spec.pool.resourceSliceCount'],
      ['FieldValueInvalid', 'spec.pool.generation'],
      ['FieldValueRequired', 'spec'],
      ['FieldValueInvalid', 'spec.devices[0].name'],
      ['FieldValueInvalid', 'spec.devices[1].name'],
      ['FieldValueDuplicate', 'spec.devices[1].name'],
    ]);
    expect(details.causes[5]?.message).toBe(
      'Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required',
    );
    const message = answer.body.message as string;
    expect(
      message.startsWith(
        'ResourceSlice.resource.k8s.io "Bad_Name" is invalid: [metadata.name: Invalid value: "Bad_Name": ',
      ),
    ).toBe(true);
    expect(message.endsWith(', spec.devices[1].name: Duplicate value: "A"]')).toBe(true);
  });
});
