import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { EmulatorUnderTest } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * Field selectors on Events, through both APIs that serve them, as kube-apiserver 1.34 answers.
 *
 * - core/v1 accepts the labels of `AddFieldLabelConversionsForEvent`
 *   (`pkg/apis/core/v1/conversion.go`) and matches them against the fields of
 *   `ToSelectableFields` (`pkg/registry/core/event/strategy.go`): the involved object's seven
 *   fields, reason, reportingComponent, type, metadata.name and metadata.namespace, and `source`,
 *   which is `source.component` or, when that is empty, the reporting controller.
 * - events.k8s.io/v1 stores into the same registry and translates its own labels to those
 *   (`pkg/apis/events/v1/conversion.go` `AddFieldLabelConversionsForEvent`): `regarding.*` to
 *   `involvedObject.*`, `reportingController` to `reportingComponent`; reason, source, type and
 *   the metadata labels keep their names. Neither API takes the other's names.
 * - A label the conversion refuses is `field label not supported: <label>`, answered by the list
 *   handler as a 400 BadRequest (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/get.go`
 *   `ListResource`, `errors.NewBadRequest`); the terms are sorted before they are converted
 *   (`apimachinery/pkg/fields/selector.go` `parseSelector`), so the first refused label in that
 *   order is named.
 * - `kubectl events --for node/node-a` lists core/v1 Events with an involvedObject selector.
 */

const run = promisify(execFile);
const KUBECTL = '/usr/bin/kubectl';
const CORE = '/api/v1/namespaces/default/events';
const EVENTS_V1 = '/apis/events.k8s.io/v1/namespaces/default/events';

const kube = new EmulatorUnderTest();
let dir: string;

/** The emulator's clock; Events are written one minute before it. */
let nowMs: number;

function microTime(offsetMs = 0): string {
  return new Date(nowMs + offsetMs).toISOString().replace('Z', '000Z');
}

/**
 * Three Events with distinct values for every selectable field:
 * - `recorded`: a controller's events.k8s.io/v1 Event about Node node-a (no source);
 * - `kubelet`: a legacy core/v1 Event about a container of Pod p1, from the kubelet;
 * - `both`: a core/v1 Warning about Node node-b with a source and a reporting controller.
 */
async function seed(): Promise<void> {
  const writes: [path: string, body: Json][] = [
    [
      EVENTS_V1,
      {
        metadata: { name: 'recorded' },
        eventTime: microTime(-60_000),
        reportingController: 'slicekeeper.dev/slice-syncer',
        reportingInstance: 'slice-syncer-0',
        action: 'PublishSlices',
        reason: 'SlicesPublished',
        note: 'published 2 ResourceSlices',
        type: 'Normal',
        regarding: { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-node-a' },
      },
    ],
    [
      CORE,
      {
        metadata: { name: 'kubelet' },
        involvedObject: {
          apiVersion: 'v1',
          kind: 'Pod',
          namespace: 'default',
          name: 'p1',
          uid: 'uid-p1',
          resourceVersion: '42',
          fieldPath: 'spec.containers{c}',
        },
        reason: 'Started',
        message: 'Started container c',
        source: { component: 'kubelet', host: 'node-a' },
        firstTimestamp: '2026-01-01T10:00:00Z',
        lastTimestamp: '2026-01-01T10:00:00Z',
        count: 1,
        type: 'Normal',
      },
    ],
    [
      CORE,
      {
        metadata: { name: 'both' },
        involvedObject: { kind: 'Node', name: 'node-b', uid: 'uid-node-b' },
        reason: 'PublishFailed',
        message: 'driver unreachable',
        source: { component: 'other' },
        reportingComponent: 'example.com/reporter',
        type: 'Warning',
      },
    ],
  ];
  for (const [path, body] of writes) expect((await kube.call('POST', path, body)).status).toBe(201);
}

async function names(path: string, selector: string): Promise<string[]> {
  const listed = await kube.call('GET', `${path}?fieldSelector=${encodeURIComponent(selector)}`);
  expect(listed.status).toBe(200);
  return (listed.body.items as Json[]).map((e) => String((e.metadata as Json).name)).sort();
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'events-selectors-'));
  nowMs = Date.now();
  await kube.start({ kubeconfigPath: join(dir, 'kubeconfig'), clock: { now: () => nowMs } });
  await seed();
});

afterEach(async () => {
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
});

jest.setTimeout(30_000);

type Case = [selector: string, selected: string[]];

describe('core/v1 Events: ToSelectableFields', () => {
  const cases: Case[] = [
    ['involvedObject.kind=Pod', ['kubelet']],
    ['involvedObject.namespace=default', ['kubelet']],
    ['involvedObject.namespace=', ['both', 'recorded']],
    ['involvedObject.name=node-a', ['recorded']],
    ['involvedObject.uid=uid-node-b', ['both']],
    ['involvedObject.apiVersion=v1', ['kubelet', 'recorded']],
    ['involvedObject.resourceVersion=42', ['kubelet']],
    ['involvedObject.fieldPath=spec.containers{c}', ['kubelet']],
    ['reason=PublishFailed', ['both']],
    ['reportingComponent=slicekeeper.dev/slice-syncer', ['recorded']],
    ['reportingComponent=', ['kubelet']],
    ['source=kubelet', ['kubelet']],
    // source falls back to the reporting controller only when source.component is empty.
    ['source=slicekeeper.dev/slice-syncer', ['recorded']],
    ['source=other', ['both']],
    ['source=example.com/reporter', []],
    ['type=Warning', ['both']],
    ['type!=Warning', ['kubelet', 'recorded']],
    ['metadata.name=kubelet', ['kubelet']],
    ['metadata.namespace=default', ['both', 'kubelet', 'recorded']],
    ['involvedObject.kind=Node,involvedObject.name!=node-a', ['both']],
  ];

  it.each(cases)('%s', async (selector, selected) => {
    expect(await names(CORE, selector)).toEqual(selected);
    // The same selector across namespaces.
    expect(await names('/api/v1/events', selector)).toEqual(selected);
  });
});

describe('events.k8s.io/v1 Events: AddFieldLabelConversionsForEvent', () => {
  const cases: Case[] = [
    ['regarding.kind=Pod', ['kubelet']],
    ['regarding.namespace=default', ['kubelet']],
    ['regarding.name=node-a', ['recorded']],
    ['regarding.uid=uid-node-b', ['both']],
    ['regarding.apiVersion=v1', ['kubelet', 'recorded']],
    ['regarding.resourceVersion=42', ['kubelet']],
    ['regarding.fieldPath=spec.containers{c}', ['kubelet']],
    ['reason=Started', ['kubelet']],
    ['reportingController=example.com/reporter', ['both']],
    ['source=slicekeeper.dev/slice-syncer', ['recorded']],
    ['type=Normal', ['kubelet', 'recorded']],
    ['metadata.name=both', ['both']],
    ['metadata.namespace!=default', []],
    ['regarding.kind=Node,reportingController!=example.com/reporter', ['recorded']],
  ];

  it.each(cases)('%s', async (selector, selected) => {
    expect(await names(EVENTS_V1, selector)).toEqual(selected);
    expect(await names('/apis/events.k8s.io/v1/events', selector)).toEqual(selected);
  });
});

describe('field label not supported', () => {
  const cases: [api: string, label: string, path: string, selector: string][] = [
    ['core/v1', 'regarding.name', CORE, 'regarding.name=node-a'],
    ['core/v1', 'reportingController', CORE, 'reportingController=x'],
    ['core/v1', 'message', CORE, 'message=x'],
    ['core/v1', 'source.component', CORE, 'source.component=kubelet'],
    ['events.k8s.io/v1', 'involvedObject.name', EVENTS_V1, 'involvedObject.name=node-a'],
    ['events.k8s.io/v1', 'reportingComponent', EVENTS_V1, 'reportingComponent=x'],
    ['events.k8s.io/v1', 'note', EVENTS_V1, 'note=x'],
    ['events.k8s.io/v1', 'deprecatedSource', EVENTS_V1, 'deprecatedSource=x'],
    // Terms are sorted first: "action" is refused before "zone" is looked at.
    ['events.k8s.io/v1', 'action', EVENTS_V1, 'zone=1,reason=x,action=y'],
  ];

  it.each(cases)('%s refuses %s', async (_api, label, path, selector) => {
    const listed = await kube.call('GET', `${path}?fieldSelector=${encodeURIComponent(selector)}`);
    expect(listed.status).toBe(400);
    expect(listed.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `field label not supported: ${label}`,
      reason: 'BadRequest',
      code: 400,
    });
    const watched = await kube.call(
      'GET',
      `${path}?watch=true&fieldSelector=${encodeURIComponent(selector)}`,
    );
    expect(watched.status).toBe(400);
    expect(watched.body.message).toBe(`field label not supported: ${label}`);
  });
});

describe('watch', () => {
  it('streams only the Events the translated selector matches', async () => {
    const listed = await kube.call('GET', CORE);
    const rv = String((listed.body.metadata as Json).resourceVersion);
    await kube.call(
      'PATCH',
      `${EVENTS_V1}/recorded`,
      { series: { count: 2, lastObservedTime: microTime() } },
      'application/strategic-merge-patch+json',
    );
    await kube.call('PATCH', `${CORE}/both`, { count: 2 }, 'application/merge-patch+json');
    const selector = encodeURIComponent('regarding.name=node-a');
    const events = await kube.firstWatchEvents(
      `${EVENTS_V1}?watch=true&resourceVersion=${rv}&fieldSelector=${selector}`,
      1,
    );
    expect(events.map((e) => [e.type, ((e.object as Json).metadata as Json).name])).toEqual([
      ['MODIFIED', 'recorded'],
    ]);
  });
});

describe('kubectl events --for', () => {
  it('lists the Events of one Node, found by its involvedObject', async () => {
    await kube.call('POST', '/api/v1/nodes', { metadata: { name: 'node-a' } });
    const { stdout, stderr } = await run(
      KUBECTL,
      [
        '--kubeconfig',
        kube.kubeconfigPath ?? '',
        '--cache-dir',
        join(dir, 'cache'),
        'events',
        '--for',
        'node/node-a',
      ],
      { timeout: 20_000 },
    );
    expect(stderr).toBe('');
    const lines = stdout.trim().split('\n');
    expect(lines[0]?.split(/\s{2,}/)).toEqual(['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
    expect(lines.slice(1).map((line) => line.split(/\s{2,}/).slice(1))).toEqual([
      ['Normal', 'SlicesPublished', 'Node/node-a', 'published 2 ResourceSlices'],
    ]);
  });
});
