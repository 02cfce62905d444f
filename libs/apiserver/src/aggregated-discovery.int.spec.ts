import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * Aggregated discovery as kube-apiserver 1.34 serves it to kubectl and client-go
 * (`staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated/handler.go`, `etag.go`;
 * types in `k8s.io/api/apidiscovery/v2`): `/api` and `/apis` answer an `APIGroupDiscoveryList`
 * when the Accept header asks for `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2`, with
 * that media type as Content-Type (client-go reads it to tell the document from the legacy
 * one), an ETag, `Vary: Accept`, and a 304 for a matching If-None-Match. Versions come
 * preferred first, each resource with its scope, singular name, verbs and subresources.
 */

const V2 = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
const KUBECTL_ACCEPT = `${V2},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json`;

const kube = new EmulatorUnderTest();

beforeAll(() => kube.start());
afterAll(() => kube.close());

async function discover(
  path: string,
  accept = KUBECTL_ACCEPT,
  extra: Record<string, string> = {},
): Promise<{ res: Response; body: Json | undefined }> {
  const res = await fetch(`${kube.url}${path}`, { headers: { Accept: accept, ...extra } });
  const text = await res.text();
  return { res, body: text === '' ? undefined : (JSON.parse(text) as Json) };
}

interface Group {
  metadata: { name?: string; creationTimestamp: null };
  versions: { version: string; freshness: string; resources: Json[] }[];
}

describe('aggregated discovery', () => {
  it('answers /apis as an APIGroupDiscoveryList with its media type, ETag and Vary', async () => {
    const { res, body } = await discover('/apis');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(V2);
    expect(res.headers.get('vary')).toBe('Accept');
    expect(res.headers.get('etag')).toMatch(/^"[0-9A-F]{128}"$/);
    expect(body).toMatchObject({
      kind: 'APIGroupDiscoveryList',
      apiVersion: 'apidiscovery.k8s.io/v2',
      metadata: {},
    });
    const groups = (body?.items ?? []) as Group[];
    const dra = groups.find((g) => g.metadata.name === 'resource.k8s.io');
    expect(dra?.metadata).toEqual({ name: 'resource.k8s.io', creationTimestamp: null });
    expect(dra?.versions.map((v) => v.version)).toEqual(['v1', 'v1beta2', 'v1beta1']);
    expect(dra?.versions.every((v) => v.freshness === 'Current')).toBe(true);
    expect(dra?.versions[0]?.resources).toContainEqual({
      resource: 'resourceslices',
      responseKind: { group: 'resource.k8s.io', version: 'v1', kind: 'ResourceSlice' },
      scope: 'Cluster',
      singularResource: 'resourceslice',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
    });
  });

  it('answers 304 to a client that sends the ETag it has', async () => {
    const first = await discover('/apis');
    const etag = first.res.headers.get('etag') ?? '';
    const again = await discover('/apis', KUBECTL_ACCEPT, { 'If-None-Match': etag });
    expect(again.res.status).toBe(304);
    expect(again.body).toBeUndefined();
  });

  it('lists the core group under /api with Node and its status subresource', async () => {
    const { res, body } = await discover('/api');
    expect(res.headers.get('content-type')).toBe(V2);
    const [core] = (body?.items ?? []) as Group[];
    expect(core?.metadata).toEqual({ creationTimestamp: null });
    expect(core?.versions[0]?.resources).toContainEqual({
      resource: 'nodes',
      responseKind: { group: '', version: 'v1', kind: 'Node' },
      scope: 'Cluster',
      singularResource: 'node',
      verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'],
      shortNames: ['no'],
      subresources: [
        {
          subresource: 'proxy',
          responseKind: { group: '', version: 'v1', kind: 'NodeProxyOptions' },
          verbs: ['create', 'delete', 'get', 'patch', 'update'],
        },
        {
          subresource: 'status',
          responseKind: { group: '', version: 'v1', kind: 'Node' },
          verbs: ['get', 'patch', 'update'],
        },
      ],
    });
  });

  it('answers the legacy APIGroupList to a client that asks only for JSON', async () => {
    const { res, body } = await discover('/apis', 'application/json');
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(body?.kind).toBe('APIGroupList');
  });

  it('lists every group it describes in the order of the legacy list', async () => {
    const aggregated = ((await discover('/apis')).body?.items ?? []) as Group[];
    const legacy = ((await discover('/apis', 'application/json')).body?.groups ?? []) as {
      name: string;
    }[];
    const legacyNames = legacy.map((g) => g.name);
    const names = aggregated.map((g) => g.metadata.name ?? '');
    expect(names.every((n) => legacyNames.includes(n))).toBe(true);
    expect(names).toEqual(legacyNames.filter((n) => names.includes(n)));
  });
});
