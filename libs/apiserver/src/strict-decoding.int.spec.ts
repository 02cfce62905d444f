import { ApiError } from './api-error';
import { NODES } from './emulator-objects.test-helper';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';
import { applyStrictWarnings, patchDocumentStrictErrors } from './request-decoding';

/**
 * Repeated keys in a create or update body, under each `fieldValidation` directive, as
 * kube-apiserver 1.34 treats them. Upstream: the strict serializer
 * (`staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json/json.go` `unmarshal`) decodes a
 * JSON body with sigs.k8s.io/json's `UnmarshalStrict`, which reports `duplicate field "<path>"` for
 * a known field or map key met twice, in document order among the `unknown field` errors (a key
 * both unknown and repeated is only unknown); a YAML body first goes through sigs.k8s.io/yaml's
 * `YAMLToJSONStrict`, whose go-yaml error ("yaml: unmarshal errors:", then `line N: key "x"
 * already set in map`) comes before the unknown fields of the key-sorted JSON. The expected texts
 * are those of `test/integration/apiserver/field_validation_test.go` (`testFieldValidationPost`,
 * `testFieldValidationPut`): no `json:` prefix, one `Warning` per error and per YAML line
 * (`handlers/rest.go` `addStrictDecodingWarnings`). Without Strict the body decodes as Go's
 * decoder reads it: the last of repeated scalar keys wins.
 */

const kube = new EmulatorUnderTest();

beforeEach(() => kube.start());
afterEach(() => kube.close());

/** A Node body with repeated and unknown keys at several depths, as a JSON text. */
const REPEATED_JSON = `{
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {
    "name": "first",
    "name": "n1",
    "labels": {"zone": "a", "zone": "b"},
    "unknownMeta": "x"
  },
  "spec": {
    "unknown1": 1,
    "unknownDupe": 1,
    "unknownDupe": 2,
    "unschedulable": false,
    "unschedulable": true,
    "taints": [{"key": "k", "effect": "NoSchedule", "colour": "red", "effect": "NoExecute"}]
  }
}`;

const JSON_ERRORS = [
  'duplicate field "metadata.name"',
  'duplicate field "metadata.labels.zone"',
  'unknown field "metadata.unknownMeta"',
  'unknown field "spec.unknown1"',
  'unknown field "spec.unknownDupe"',
  'duplicate field "spec.unschedulable"',
  'unknown field "spec.taints[0].colour"',
  'duplicate field "spec.taints[0].effect"',
];

/** The same Node as YAML; line numbers are those of the repeated keys' values. */
const REPEATED_YAML = `apiVersion: v1
kind: Node
metadata:
  name: first
  name: n1
  unknownMeta: x
spec:
  unknown1: 1
  unknownDupe: 1
  unknownDupe: 2
  unschedulable: false
  unschedulable: true
  taints:
  - key: k
    effect: NoSchedule
    colour: red
    effect: NoExecute
`;

const YAML_LINES = [
  'line 5: key "name" already set in map',
  'line 10: key "unknownDupe" already set in map',
  'line 12: key "unschedulable" already set in map',
  'line 17: key "effect" already set in map',
];

/** Unknown fields of the key-sorted JSON the YAML converts to. */
const YAML_UNKNOWN = [
  'unknown field "metadata.unknownMeta"',
  'unknown field "spec.taints[0].colour"',
  'unknown field "spec.unknown1"',
  'unknown field "spec.unknownDupe"',
];

const CANNOT_HANDLE = 'Node in version "v1" cannot be handled as a Node: strict decoding error: ';

interface Answer {
  status: number;
  body: Json;
  warnings: string[];
}

/** One request; each `Warning: 299` header value is one warning's text. */
async function send(method: string, path: string, body: string, type: string): Promise<Answer> {
  const { status, body: answered, headers } = await kube.exchange(method, path, body, type);
  const header = headers.get('warning');
  const warnings =
    header === null
      ? []
      : header.split(/,\s*(?=299 )/).map((w) => JSON.parse(w.replace(/^299 - /, '')) as string);
  return { status, body: answered, warnings };
}

/** Creates or replaces Node n1 with `body`. */
async function write(verb: 'create' | 'update', body: string, type: string, directive: string) {
  const query = directive === '' ? '' : `?fieldValidation=${directive}`;
  if (verb === 'create') return send('POST', `${NODES}${query}`, body, type);
  await kube.call('POST', NODES, { metadata: { name: 'n1' } });
  return send('PUT', `${NODES}/n1${query}`, body, type);
}

const BODIES = [
  {
    format: 'JSON',
    body: REPEATED_JSON,
    type: 'application/json',
    message: `${CANNOT_HANDLE}${JSON_ERRORS.join(', ')}`,
    warnings: JSON_ERRORS,
  },
  {
    format: 'YAML',
    body: REPEATED_YAML,
    type: 'application/yaml',
    message: `${CANNOT_HANDLE}yaml: unmarshal errors:\n  ${YAML_LINES.join('\n  ')}, ${YAML_UNKNOWN.join(', ')}`,
    warnings: [...YAML_LINES, ...YAML_UNKNOWN],
  },
];

const VERBS = ['create', 'update'] as const;

describe.each(VERBS)('repeated keys on %s', (verb) => {
  describe.each(BODIES)('in a $format body', ({ body, type, message, warnings }) => {
    it('strict decoding error: duplicate field, a 400 under Strict that stores nothing', async () => {
      const refused = await write(verb, body, type, 'Strict');
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ reason: 'BadRequest', code: 400, message });
      const node = await kube.call('GET', `${NODES}/n1`);
      if (verb === 'create') expect(node.status).toBe(404);
      else expect((node.body.spec as Json | undefined)?.unschedulable).toBeUndefined();
    });

    it.each(['Warn', ''])(
      'addStrictDecodingWarnings: one Warning per error under "%s"',
      async (directive) => {
        const written = await write(verb, body, type, directive);
        expect(written.status).toBe(verb === 'create' ? 201 : 200);
        expect(written.warnings).toEqual(warnings);
      },
    );

    it('keeps the last of repeated keys, as Go decodes them, and says nothing under Ignore', async () => {
      const written = await write(verb, body, type, 'Ignore');
      expect(written.status).toBe(verb === 'create' ? 201 : 200);
      expect(written.warnings).toEqual([]);
      expect(written.body).toMatchObject({
        metadata: { name: 'n1' },
        spec: { unschedulable: true },
      });
      // A create also gets the not-ready taint of the TaintNodesByCondition admission plugin.
      expect((written.body.spec as { taints: Json[] }).taints[0]).toEqual({
        key: 'k',
        effect: 'NoExecute',
      });
      expect(written.body.spec).not.toHaveProperty('unknown1');
    });
  });
});

describe('what strict decoding does not report', () => {
  const cases = [
    {
      name: 'keys repeated inside an unknown field (its value is skipped)',
      body: '{"metadata": {"name": "n1"}, "extra": {"a": 1, "a": 2}}',
      errors: ['unknown field "extra"'],
    },
    {
      name: 'a repeated unknown field, reported once',
      body: '{"metadata": {"name": "n1"}, "extra": 1, "extra": 2}',
      errors: ['unknown field "extra"'],
    },
    {
      name: 'a repeated key three times, reported once',
      body: '{"metadata": {"name": "n1"}, "spec": {"podCIDR": "a", "podCIDR": "b", "podCIDR": "c"}}',
      errors: ['duplicate field "spec.podCIDR"'],
    },
    {
      name: 'the same key in two objects of a list',
      body: '{"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]}}',
      errors: [],
    },
  ];

  it.each(cases)('$name', async ({ body, errors }) => {
    const written = await send('POST', NODES, body, 'application/json');
    expect(written.status).toBe(201);
    expect(written.warnings).toEqual(errors);
  });
});

/**
 * The patch document's own strict errors, which `handlers/patch.go` puts before the patched
 * object's unknown fields (`jsonPatcher.applyJSPatch`, `strategicPatchObject`) and the apply
 * configuration's repeated keys (`applyPatcher.applyPatchToCurrentObject`). Bodies and texts from
 * `testFieldValidationPatchTyped`, `testFieldValidationSMP` and `testFieldValidationApplyCreate`.
 */
describe('strict errors of patch documents', () => {
  const MERGE_PATCH = `{
	"spec": {
		"unknown1": "val1",
		"unknownDupe": "valDupe",
		"unknownDupe": "valDupe2",
		"paused": true,
		"paused": false,
		"template": {
			"spec": {
				"containers": [{
					"name": "nginx",
					"image": "nginx:latest",
					"unknownNested": "val1",
					"imagePullPolicy": "Always",
					"imagePullPolicy": "Never"
				}]
			}
		}
	}
}`;
  const MERGE_ERRORS = [
    'duplicate field "spec.unknownDupe"',
    'duplicate field "spec.paused"',
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
  ];
  const JSON_PATCH = `[
	{"op": "add", "path": "/spec/unknown1", "value": "val1", "foo":"bar"},
	{"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val1"},
	{"op": "add", "path": "/spec/unknownDupe", "value": "valDupe"},
	{"op": "add", "path": "/spec/paused", "value": true},
	{"op": "add", "path": "/spec/paused", "value": false}
]`;
  const cases = [
    {
      name: 'merge-patch: the untyped map repeats keys, unknown ones included',
      patch: MERGE_PATCH,
      type: 'application/merge-patch+json',
      errors: MERGE_ERRORS,
    },
    {
      name: 'smp: the same',
      patch: MERGE_PATCH,
      type: 'application/strategic-merge-patch+json',
      errors: MERGE_ERRORS,
    },
    {
      name: 'json-patch: the operations as jsonPatchOp structs',
      patch: JSON_PATCH,
      type: 'application/json-patch+json',
      errors: ['json patch unknown field "[0].foo"', 'json patch duplicate field "[1].path"'],
    },
    {
      name: "json-patch: keys repeated inside an operation's value",
      patch: '[{"op": "add", "path": "/metadata/labels", "value": {"a": "1", "a": "2"}}]',
      type: 'application/json-patch+json',
      errors: ['json patch duplicate field "[0].value.a"'],
    },
  ];

  it.each(cases)('$name', ({ patch, type, errors }) => {
    expect(patchDocumentStrictErrors(patch, type, 'Strict')).toEqual(errors);
    expect(patchDocumentStrictErrors(patch, type, 'Warn')).toEqual(errors);
    expect(patchDocumentStrictErrors(patch, type, 'Ignore')).toEqual([]);
  });

  const APPLY = `{
		"apiVersion": "apps/v1",
		"kind": "Deployment",
		"metadata": {
			"name": "apply-create-deployment",
			"labels": {"app": "nginx"}
		},
		"spec": {
			"paused": false,
			"paused": true,
			"selector": {
				"matchLabels": {
					"app": "nginx"
				}
			},
			"template": {
				"metadata": {
					"labels": {
						"app": "nginx"
					}
				},
				"spec": {
					"containers": [{
						"name":  "nginx",
						"image": "nginx:latest",
						"imagePullPolicy": "Never",
						"imagePullPolicy": "Always"
					}]
				}
			}
		}
	}`;

  it('apply: error strict decoding YAML, a 400 under Strict', () => {
    let thrown: unknown;
    try {
      applyStrictWarnings(APPLY, 'Strict');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ApiError);
    expect(thrown).toMatchObject({
      code: 400,
      body: { reason: 'BadRequest' },
      message:
        'error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 10: key "paused" already set in map\n  line 27: key "imagePullPolicy" already set in map',
    });
  });

  it('apply: one Warning per repeated key under Warn, none under Ignore', () => {
    expect(applyStrictWarnings(APPLY, 'Warn')).toEqual([
      'line 10: key "paused" already set in map',
      'line 27: key "imagePullPolicy" already set in map',
    ]);
    expect(applyStrictWarnings(APPLY, 'Ignore')).toEqual([]);
  });
});

/**
 * A merge or strategic merge patch is applied to Go maps (`jsonpatch.MergePatch`,
 * `strategicpatch.StrategicMergeMapPatch`), so the patched object's unknown fields come in
 * sorted key order whatever the patch's order, as `testFieldValidationPatchTyped` and
 * `testFieldValidationSMP` list them.
 */
describe('unknown fields of a merged patch', () => {
  it.each(['application/merge-patch+json', 'application/strategic-merge-patch+json'])(
    '%s: in sorted key order',
    async (type) => {
      await kube.call('POST', NODES, { metadata: { name: 'n1' } });
      const patch = {
        spec: { zz: 1, taints: [{ key: 'k', effect: 'NoSchedule', yy: 1 }], aa: 2 },
        metadata: { qq: 1 },
      };
      const patched = await send('PATCH', `${NODES}/n1`, JSON.stringify(patch), type);
      expect(patched.status).toBe(200);
      expect(patched.warnings).toEqual([
        'unknown field "metadata.qq"',
        'unknown field "spec.aa"',
        'unknown field "spec.taints[0].yy"',
        'unknown field "spec.zz"',
      ]);
    },
  );
});

/**
 * Repeated keys of a patch document and of an apply configuration over HTTP
 * (`handlers/patch.go`: `jsonPatcher.applyPatchToCurrentObject` reports the document's before
 * the patched object's unknown fields; `applyPatcher` decodes the configuration again with
 * `yaml.UnmarshalStrict` once the apply has succeeded).
 */
describe('repeated keys of a patch or apply over HTTP', () => {
  const MERGE = '{"spec":{"unschedulable":false,"unschedulable":true}}';
  const APPLY_NODE =
    'apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nspec:\n  unschedulable: false\n  unschedulable: true\n';

  it('merge patch: strict decoding error under Strict, a Warning under Warn, the last key kept', async () => {
    await kube.call('POST', NODES, { metadata: { name: 'n1' } });
    const type = 'application/merge-patch+json';
    const refused = await send('PATCH', `${NODES}/n1?fieldValidation=Strict`, MERGE, type);
    expect(refused.status).toBe(422);
    expect(JSON.stringify(refused.body)).toContain(
      'strict decoding error: duplicate field \\"spec.unschedulable\\"',
    );
    const warned = await send('PATCH', `${NODES}/n1?fieldValidation=Warn`, MERGE, type);
    expect(warned.status).toBe(200);
    expect(warned.warnings).toEqual(['duplicate field "spec.unschedulable"']);
    expect(warned.body).toMatchObject({ spec: { unschedulable: true } });
  });

  it('apply: a 400 under Strict, one Warning per repeated key under Warn', async () => {
    const type = 'application/apply-patch+yaml';
    const path = `${NODES}/n1?fieldManager=test`;
    const refused = await send('PATCH', `${path}&fieldValidation=Strict`, APPLY_NODE, type);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      message:
        'error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key "unschedulable" already set in map',
    });
    const warned = await send('PATCH', `${path}&fieldValidation=Warn`, APPLY_NODE, type);
    expect(warned.status).toBe(201);
    expect(warned.warnings).toEqual(['line 7: key "unschedulable" already set in map']);
  });
});
