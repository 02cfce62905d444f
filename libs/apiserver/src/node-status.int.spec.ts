import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import {
  createNode as createNamedNode,
  failureStatus,
  METHOD_NOT_ALLOWED,
  NODES,
  READY_CONDITION as READY,
} from './emulator-objects.test-helper';
import { EmulatorUnderTest, readWatch } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * The Node status subresource as kubectl and a controller use it: `GET/PUT/PATCH
 * /api/v1/nodes/{name}/status` (pkg/registry/core/node: a status write keeps the stored spec, a
 * main-resource write keeps the stored status), strategic merge patches of `status.conditions`
 * merged by `type`, watch events, and the real server's Status bodies for failures.
 */

const run = promisify(execFile);
const KUBECTL = '/usr/bin/kubectl';
/** apimachinery's IsQualifiedName message for the name part of a label key. */
const QUALIFIED_NAME_PART =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

let dir: string;
const kube = new EmulatorUnderTest();
const call = kube.call.bind(kube);

async function kubectl(
  ...args: string[]
): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(
      KUBECTL,
      ['--kubeconfig', kube.kubeconfigPath ?? '', '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 20_000 },
    );
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; code?: number };
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', code: failed.code ?? 1 };
  }
}

/** Creates node-a as a kubelet registers it: with a status that has a Ready condition. */
function createNode(): Promise<Json> {
  return createNamedNode(kube, 'node-a', { capacity: { cpu: '8' }, conditions: [READY] });
}

function metadataOf(node: Json): Json {
  return node.metadata as Json;
}

function conditionTypes(node: Json): unknown[] {
  const status = node.status as { conditions?: { type: string }[] };
  return (status.conditions ?? []).map((c) => c.type);
}

/** Reads a watch on nodes from `resourceVersion` until the first event, then hangs up. */
async function firstEvent(resourceVersion: string, write: () => Promise<unknown>): Promise<Json> {
  const [event] = await readWatch(
    `${kube.url}${NODES}?watch=true&timeoutSeconds=20&resourceVersion=${resourceVersion}`,
    {},
    () => true,
    write,
  );
  if (event === undefined) throw new Error('the watch ended without an event');
  return event;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'node-status-'));
  await kube.start({ kubeconfigPath: join(dir, 'kubeconfig') });
});

afterEach(async () => {
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

describe('Node status subresource', () => {
  it('kubectl patch --subresource=status merges a condition by type; kubectl get shows it', async () => {
    await createNode();
    const condition = {
      type: 'DRAResourcesPublished',
      status: 'True',
      reason: 'Published',
      message: 'all 1 drivers published',
      lastHeartbeatTime: '2026-01-01T00:01:00Z',
      lastTransitionTime: '2026-01-01T00:01:00Z',
    };
    const patched = await kubectl(
      'patch',
      'node',
      'node-a',
      '--subresource=status',
      '--type=strategic',
      '-p',
      JSON.stringify({ status: { conditions: [condition] } }),
    );
    expect(patched).toMatchObject({ code: 0, stdout: 'node/node-a patched\n' });

    const shown = parseYaml((await kubectl('get', 'node', 'node-a', '-o', 'yaml')).stdout) as Json;
    // A condition new to the list comes first, as strategicpatch orders it; the kubelet's stays.
    expect((shown.status as Json).conditions).toEqual([condition, READY]);

    // The status changes, the heartbeat moves, lastTransitionTime is left out and so kept.
    const flipped = await kubectl(
      'patch',
      'node',
      'node-a',
      '--subresource=status',
      '--type=strategic',
      '-p',
      JSON.stringify({
        status: {
          conditions: [
            {
              type: 'DRAResourcesPublished',
              status: 'False',
              reason: 'PublishFailed',
              lastHeartbeatTime: '2026-01-01T00:02:00Z',
            },
          ],
        },
      }),
    );
    expect(flipped).toMatchObject({ code: 0, stdout: 'node/node-a patched\n' });
    const again = parseYaml((await kubectl('get', 'node', 'node-a', '-o', 'yaml')).stdout) as Json;
    expect((again.status as Json).conditions).toEqual([
      {
        ...condition,
        status: 'False',
        reason: 'PublishFailed',
        lastHeartbeatTime: '2026-01-01T00:02:00Z',
      },
      READY,
    ]);

    const table = (await kubectl('get', 'nodes')).stdout.trim().split('\n');
    expect(table[1]?.split(/\s+/).slice(0, 2)).toEqual(['node-a', 'Ready']);
  });

  it('a status patch changes only the status, bumps the resourceVersion and is watched as MODIFIED', async () => {
    const created = await createNode();
    const rv = metadataOf(created).resourceVersion as string;
    let patched: { status: number; body: Json } | undefined;
    const event = await firstEvent(rv, async () => {
      patched = await call(
        'PATCH',
        `${NODES}/node-a/status`,
        {
          metadata: { labels: { 'example.com/through-status': 'yes' } },
          spec: { unschedulable: true },
          status: { conditions: [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }] },
        },
        'application/merge-patch+json',
      );
    });
    expect(patched?.status).toBe(200);
    const node = patched?.body ?? {};
    // spec is the stored one; metadata is the request's (the node status strategy resets only
    // the spec); a merge patch replaces the conditions list. Unset condition times are Go's
    // zero metav1.Time, which `omitempty` does not omit: null.
    expect(node.spec).toEqual(created.spec);
    expect(metadataOf(node).labels).toEqual({ 'example.com/through-status': 'yes' });
    expect((node.status as Json).conditions).toEqual([
      {
        type: 'Ready',
        status: 'False',
        lastHeartbeatTime: null,
        lastTransitionTime: null,
        reason: 'KubeletNotReady',
      },
    ]);
    expect(Number(metadataOf(node).resourceVersion)).toBeGreaterThan(Number(rv));
    expect(event).toEqual({ type: 'MODIFIED', object: node });
  });

  it('PUT /status keeps the stored spec; PUT on the node keeps the stored status', async () => {
    const created = await createNode();
    const statusPut = await call('PUT', `${NODES}/node-a/status`, {
      ...created,
      spec: { ...(created.spec as Json), unschedulable: true },
      status: { ...(created.status as Json), conditions: [{ ...READY, status: 'False' }] },
    });
    expect(statusPut.status).toBe(200);
    expect(statusPut.body.spec).toEqual(created.spec);
    expect((statusPut.body.status as Json).conditions).toEqual([{ ...READY, status: 'False' }]);

    const nodePut = await call('PUT', `${NODES}/node-a`, {
      ...statusPut.body,
      spec: { ...(created.spec as Json), unschedulable: true },
      status: { conditions: [] },
    });
    expect(nodePut.status).toBe(200);
    expect(nodePut.body.spec).toMatchObject({ unschedulable: true });
    expect(nodePut.body.status).toEqual(statusPut.body.status);

    const got = await call('GET', `${NODES}/node-a/status`);
    expect(got).toEqual({ status: 200, body: nodePut.body });
  });

  it('a JSON patch of /status adds a condition; a controller two-way patch keeps its order', async () => {
    await createNode();
    const added = await call(
      'PATCH',
      `${NODES}/node-a/status`,
      [{ op: 'add', path: '/status/conditions/-', value: { type: 'X', status: 'True' } }],
      'application/json-patch+json',
    );
    expect(added.status).toBe(200);
    expect(conditionTypes(added.body)).toEqual(['Ready', 'X']);

    // What client-go's CreateTwoWayMergePatch sends: the whole order, then the changed item.
    const ordered = await call(
      'PATCH',
      `${NODES}/node-a/status`,
      {
        status: {
          '$setElementOrder/conditions': [{ type: 'Ready' }, { type: 'X' }, { type: 'Y' }],
          conditions: [{ type: 'Y', status: 'True' }],
        },
      },
      'application/strategic-merge-patch+json',
    );
    expect(ordered.status).toBe(200);
    expect(conditionTypes(ordered.body)).toEqual(['Ready', 'X', 'Y']);
  });

  it.each([
    {
      name: 'not-found',
      request: () => call('GET', `${NODES}/ghost/status`),
      want: {
        status: 404,
        body: failureStatus(404, 'nodes "ghost" not found', {
          reason: 'NotFound',
          details: { name: 'ghost', kind: 'nodes' },
        }),
      },
    },
    {
      name: 'unsupported-media-type',
      request: () => call('PATCH', `${NODES}/node-a/status`, 'status: {}', 'text/plain'),
      want: {
        status: 415,
        // go-restful refuses it before the handler: the PATCH route consumes only patch types.
        body: failureStatus(415, '415: Unsupported Media Type', {
          reason: 'UnsupportedMediaType',
          details: {},
        }),
      },
    },
    {
      name: 'invalid-label',
      request: () =>
        call(
          'PATCH',
          `${NODES}/node-a/status`,
          { metadata: { labels: { 'bad key!': 'x' } } },
          'application/merge-patch+json',
        ),
      want: {
        status: 422,
        body: failureStatus(
          422,
          `Node "node-a" is invalid: metadata.labels: Invalid value: "bad key!": ${QUALIFIED_NAME_PART}`,
          {
            reason: 'Invalid',
            details: {
              name: 'node-a',
              kind: 'Node',
              causes: [
                {
                  reason: 'FieldValueInvalid',
                  message: `Invalid value: "bad key!": ${QUALIFIED_NAME_PART}`,
                  field: 'metadata.labels',
                },
              ],
            },
          },
        ),
      },
    },
    {
      name: 'failed-json-patch-test',
      request: () =>
        call(
          'PATCH',
          `${NODES}/node-a/status`,
          [{ op: 'test', path: '/status/phase', value: 'Running' }],
          'application/json-patch+json',
        ),
      want: {
        status: 422,
        body: failureStatus(422, 'the server rejected our request due to an error in our request', {
          reason: 'Invalid',
          details: {},
        }),
      },
    },
    {
      name: 'condition-without-merge-key',
      request: () =>
        call(
          'PATCH',
          `${NODES}/node-a/status`,
          { status: { conditions: [{ status: 'True' }] } },
          'application/strategic-merge-patch+json',
        ),
      want: {
        status: 500,
        body: failureStatus(500, 'map: map[status:True] does not contain declared merge key: type'),
      },
    },
    {
      name: 'delete-not-allowed',
      request: () => call('DELETE', `${NODES}/node-a/status`),
      want: {
        status: 405,
        body: METHOD_NOT_ALLOWED,
      },
    },
  ])('answers $name with the Status the real server sends', async ({ request, want }) => {
    await createNode();
    expect(await request()).toEqual(want);
  });
});
