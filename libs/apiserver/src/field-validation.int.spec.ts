import { NODES, resourceSlice, SLICES } from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * `fieldValidation` as kube-apiserver 1.34 applies it.
 *
 * - Create and update (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go`,
 *   `update.go`): the body is decoded by the strict serializer; a strict decoding error is a
 *   warning under `Warn`, nothing under `Ignore` and, under `Strict`, a 400 through
 *   `transformDecodeError` ("<Kind> in version "v" cannot be handled as a <Kind>: strict decoding
 *   error: …"). An empty directive is `Warn` (`handlers/rest.go` `fieldValidation`, GA since 1.27),
 *   so kubectl and client-node get warnings without asking. Each warning is one `Warning: 299`
 *   header (`addStrictDecodingWarnings`).
 * - JSON, merge and strategic merge patches (`handlers/patch.go`, `jsonPatcher` and
 *   `applyPatchToObject`): the patched object is decoded strictly; under `Strict` the unknown
 *   fields are a 422 `Invalid` of an empty GroupKind with one cause on the field `patch`.
 * - Apply (`applyPatcher`, `managedfields/internal/structuredmerge.go`): the typed conversion of
 *   the apply configuration refuses an unknown field whatever the directive, as a plain error
 *   (a 500 without a reason): "failed to create typed patch object (…): .spec.x: field not
 *   declared in schema".
 * - Fields of a disabled feature gate are fields of the versioned type, so decoding knows them
 *   (no warning) and the strategy drops them afterwards
 *   (`pkg/registry/resource/resourceslice/strategy.go` `dropDisabledFields`).
 */

const kube = new EmulatorUnderTest();

beforeEach(() => kube.start());
afterEach(() => kube.close());

interface Answer {
  status: number;
  body: Json;
  warnings: string[];
}

/** One request; each `Warning: 299` header of the answer is one warning. */
async function call(
  method: string,
  path: string,
  body: unknown,
  contentType?: string,
): Promise<Answer> {
  const { status, body: answered, headers } = await kube.exchange(method, path, body, contentType);
  const warning = headers.get('warning');
  return {
    status,
    body: answered,
    warnings: warning === null ? [] : warning.split(/,\s*(?=299 )/),
  };
}

function slice(name: string, extra: Json = {}): Json {
  return resourceSlice(name, { spec: extra });
}

function node(name: string): Json {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name } };
}

describe('fieldValidation on create and update', () => {
  it('warns about each unknown field by default, as kubectl sees it, and stores the rest', async () => {
    const created = await call('POST', SLICES, { extra: 1, ...slice('s1', { colour: 'red' }) });
    expect(created.status).toBe(201);
    expect(created.warnings).toEqual([
      '299 - "unknown field \\"extra\\""',
      '299 - "unknown field \\"spec.colour\\""',
    ]);
    expect(created.body.spec).not.toHaveProperty('colour');
  });

  it('rejects unknown fields with 400 under Strict, naming every one', async () => {
    const res = await call('POST', `${SLICES}?fieldValidation=Strict`, {
      extra: 1,
      ...slice('s1', { colour: 'red' }),
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      reason: 'BadRequest',
      message:
        'ResourceSlice in version "v1" cannot be handled as a ResourceSlice: strict decoding error: unknown field "extra", unknown field "spec.colour"',
    });
    expect((await call('GET', `${SLICES}/s1`, undefined)).status).toBe(404);
  });

  it('says nothing about unknown fields under Ignore', async () => {
    const created = await call('POST', `${SLICES}?fieldValidation=Ignore`, slice('s1', { x: 1 }));
    expect(created.status).toBe(201);
    expect(created.warnings).toEqual([]);
  });

  it('applies the directive to a PUT too', async () => {
    const created = await call('POST', SLICES, slice('s1'));
    const current = created.body;
    const put = await call('PUT', `${SLICES}/s1?fieldValidation=Strict`, {
      ...current,
      spec: { ...(current.spec as Json), colour: 'red' },
    });
    expect(put.status).toBe(400);
    expect(put.body.message).toBe(
      'ResourceSlice in version "v1" cannot be handled as a ResourceSlice: strict decoding error: unknown field "spec.colour"',
    );
    const warned = await call('PUT', `${SLICES}/s1`, {
      ...current,
      spec: { ...(current.spec as Json), colour: 'red' },
    });
    expect(warned.status).toBe(200);
    expect(warned.warnings).toEqual(['299 - "unknown field \\"spec.colour\\""']);
  });

  // ValidateCreateOptions (apimachinery/pkg/apis/meta/v1/validation/validation.go).
  it('rejects a directive it does not know as invalid CreateOptions, after the other options', async () => {
    const res = await call('POST', `${SLICES}?fieldValidation=Loud&dryRun=Some`, slice('s1'));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      reason: 'Invalid',
      message:
        'CreateOptions.meta.k8s.io "" is invalid: [dryRun: Unsupported value: ["Some"]: supported values: "All", fieldValidation: Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"]',
      details: {
        group: 'meta.k8s.io',
        kind: 'CreateOptions',
        causes: [
          { reason: 'FieldValueNotSupported', field: 'dryRun' },
          { reason: 'FieldValueNotSupported', field: 'fieldValidation' },
        ],
      },
    });
  });

  it('knows the fields of a disabled gate: no warning, and they are dropped', async () => {
    const created = await call(
      'POST',
      `${SLICES}?fieldValidation=Strict`,
      slice('s1', {
        devices: [{ name: 'gpu-0', taints: [{ key: 'example.com/broken', effect: 'NoSchedule' }] }],
      }),
    );
    expect(created.status).toBe(201);
    expect(created.warnings).toEqual([]);
    expect((created.body.spec as { devices: Json[] }).devices[0]).not.toHaveProperty('taints');
  });
});

describe('fieldValidation on patches', () => {
  beforeEach(async () => {
    expect((await call('POST', NODES, node('n1'))).status).toBe(201);
  });

  it.each([
    ['merge', 'application/merge-patch+json', { spec: { colour: 'red' } }],
    ['strategic merge', 'application/strategic-merge-patch+json', { spec: { colour: 'red' } }],
    ['JSON', 'application/json-patch+json', [{ op: 'add', path: '/spec/colour', value: 'red' }]],
  ])('warns about an unknown field a %s patch adds', async (_name, contentType, patch) => {
    const res = await call('PATCH', `${NODES}/n1`, patch, contentType);
    expect(res.status).toBe(200);
    expect(res.warnings).toEqual(['299 - "unknown field \\"spec.colour\\""']);
  });

  it.each([
    ['merge', 'application/merge-patch+json', { spec: { colour: 'red' } }],
    ['strategic merge', 'application/strategic-merge-patch+json', { spec: { colour: 'red' } }],
    ['JSON', 'application/json-patch+json', [{ op: 'add', path: '/spec/colour', value: 'red' }]],
  ])(
    'refuses a %s patch adding an unknown field under Strict as a 422 on "patch"',
    async (_name, contentType, patch) => {
      const res = await call('PATCH', `${NODES}/n1?fieldValidation=Strict`, patch, contentType);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({
        reason: 'Invalid',
        details: { causes: [{ reason: 'FieldValueInvalid', field: 'patch' }] },
      });
      expect(res.body.details).not.toHaveProperty('kind');
      expect(res.body.message).toMatch(
        /^ "" is invalid: patch: Invalid value: ".*": strict decoding error: unknown field "spec.colour"$/s,
      );
    },
  );

  it('shows a strategic merge patch under Strict as Go prints the patch map', async () => {
    const res = await call(
      'PATCH',
      `${NODES}/n1?fieldValidation=Strict`,
      { spec: { colour: 'red', unschedulable: true }, metadata: { labels: { b: '2', a: '1' } } },
      'application/strategic-merge-patch+json',
    );
    expect(res.body.message).toBe(
      ' "" is invalid: patch: Invalid value: "map[metadata:map[labels:map[a:1 b:2]] spec:map[colour:red unschedulable:true]]": strict decoding error: unknown field "spec.colour"',
    );
  });

  it('refuses an apply configuration with an unknown field under every directive', async () => {
    for (const directive of ['', '&fieldValidation=Ignore', '&fieldValidation=Strict']) {
      const res = await call(
        'PATCH',
        `${NODES}/n1?fieldManager=test${directive}`,
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' }, spec: { colour: 'red' } },
        'application/apply-patch+yaml',
      );
      expect(res.status).toBe(500);
      expect(res.body).not.toHaveProperty('reason');
      expect(res.body.message).toBe(
        'failed to create typed patch object (/n1; /v1, Kind=Node): .spec.colour: field not declared in schema',
      );
    }
  });
});
