import { startKubeEmulator } from './start-kube-emulator';
import type { RunningKubeEmulator } from './start-kube-emulator';
import type { FeatureGates } from './resource-types';

/**
 * Device taints in ResourceSlices as kube-apiserver 1.36 treats them with DRADeviceTaints on:
 * `validateDeviceTaint` and the limits of pkg/apis/resource/validation (16 taints a device,
 * effects None/NoSchedule/NoExecute, 64 devices a slice once any device has taints), and
 * `SetDefaults_DeviceTaint` filling in `timeAdded` from the server's clock, to the second.
 */

type Json = Record<string, unknown>;
const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const APPLY = `?fieldManager=driver&force=true`;

/** The emulator's clock, set back before each test and moved by the tests that need it. */
const START_MS = Date.parse('2026-03-01T10:00:00.750Z');
let nowMs = START_MS;
let running: RunningKubeEmulator | undefined;

beforeEach(() => {
  nowMs = START_MS;
});

afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function start(featureGates: FeatureGates = { DRADeviceTaints: true }): Promise<void> {
  running = await startKubeEmulator({
    port: 0,
    release: '1.36',
    featureGates,
    clock: { now: () => nowMs },
  });
}

async function call(
  method: string,
  path: string,
  body: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${running?.url ?? ''}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': contentType },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

function slice(devices: Json[]): Json {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name: 's' },
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
      devices,
    },
  };
}

function devices(count: number, extra: (i: number) => Json = () => ({})): Json[] {
  return Array.from({ length: count }, (_, i) => ({ name: `gpu-${i}`, ...extra(i) }));
}

function taints(count: number): Json[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `example.com/t${i}`,
    effect: 'NoSchedule',
  }));
}

function storedTaints(body: Json): unknown {
  return ((body.spec as Json).devices as Json[]).map((d) => d.taints);
}

/** A 422 Invalid Status for the slice named `s`, as apimachinery's NewInvalid builds it. */
function invalid(causes: { reason: string; field: string; message: string }[]): Json {
  const all = causes.map((c) => `${c.field}: ${c.message}`);
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `ResourceSlice.resource.k8s.io "s" is invalid: ${all.length === 1 ? (all[0] ?? '') : `[${all.join(', ')}]`}`,
    reason: 'Invalid',
    details: {
      name: 's',
      group: 'resource.k8s.io',
      kind: 'ResourceSlice',
      causes: causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field })),
    },
    code: 422,
  };
}

const QUALIFIED_NAME =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

describe('device taints with DRADeviceTaints on (kube-apiserver 1.36)', () => {
  it.each([
    {
      name: 'effect-none-and-sixteen-taints-accepted',
      devices: [
        { name: 'gpu-0', taints: [{ key: 'example.com/info', value: 'v1', effect: 'None' }] },
        { name: 'gpu-1', taints: taints(16) },
      ],
      want: 201,
    },
    {
      name: 'prefer-no-schedule-unsupported',
      devices: [
        { name: 'gpu-0', taints: [{ key: 'example.com/unhealthy', effect: 'PreferNoSchedule' }] },
      ],
      want: invalid([
        {
          reason: 'FieldValueNotSupported',
          field: 'spec.devices[0].taints[0].effect',
          message:
            'Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"',
        },
      ]),
    },
    {
      name: 'seventeen-taints-too-many',
      devices: [{ name: 'gpu-0', taints: taints(17) }],
      want: invalid([
        {
          reason: 'FieldValueTooMany',
          field: 'spec.devices[0].taints',
          message: 'Too many: 17: must have at most 16 items',
        },
      ]),
    },
    {
      name: 'key-and-effect-required',
      devices: [{ name: 'gpu-0', taints: [{ value: 'v' }] }],
      want: invalid([
        {
          reason: 'FieldValueInvalid',
          field: 'spec.devices[0].taints[0].key',
          message: 'Invalid value: "": name part must be non-empty',
        },
        {
          reason: 'FieldValueInvalid',
          field: 'spec.devices[0].taints[0].key',
          message: `Invalid value: "": ${QUALIFIED_NAME}`,
        },
        {
          reason: 'FieldValueRequired',
          field: 'spec.devices[0].taints[0].effect',
          message: 'Required value',
        },
      ]),
    },
    {
      name: 'value-not-a-label-value',
      devices: [
        {
          name: 'gpu-0',
          taints: [{ key: 'example.com/k', value: 'bad value', effect: 'NoExecute' }],
        },
      ],
      want: invalid([
        {
          reason: 'FieldValueInvalid',
          field: 'spec.devices[0].taints[0].value',
          message: `Invalid value: "bad value": ${LABEL_VALUE}`,
        },
      ]),
    },
    {
      name: 'sixty-five-devices-one-tainted',
      devices: devices(65, (i) => (i === 64 ? { taints: taints(1) } : {})),
      want: invalid([
        {
          reason: 'FieldValueTooMany',
          field: 'spec.devices',
          message: 'Too many: 65: must have at most 64 items',
        },
      ]),
    },
    {
      name: 'sixty-five-devices-empty-taint-lists-accepted',
      devices: devices(65, () => ({ taints: [] })),
      want: 201,
    },
  ])('$name', async ({ devices: sent, want }) => {
    await start();
    const created = await call('POST', SLICES, slice(sent));
    if (typeof want === 'number') expect(created.status).toBe(want);
    else expect(created).toEqual({ status: 422, body: want });
  });

  it('fills in timeAdded from the server clock, to the second, and keeps a given one', async () => {
    await start();
    const created = await call(
      'POST',
      SLICES,
      slice([
        {
          name: 'gpu-0',
          taints: [
            { key: 'example.com/a', effect: 'NoSchedule' },
            { key: 'example.com/b', effect: 'NoExecute', timeAdded: '2026-02-01T00:00:00Z' },
          ],
        },
      ]),
    );
    expect(created.status).toBe(201);
    expect(storedTaints(created.body)).toEqual([
      [
        { key: 'example.com/a', effect: 'NoSchedule', timeAdded: '2026-03-01T10:00:00Z' },
        { key: 'example.com/b', effect: 'NoExecute', timeAdded: '2026-02-01T00:00:00Z' },
      ],
    ]);
  });

  it('a resend without timeAdded is a change: new timeAdded, next generation', async () => {
    await start();
    const sent = slice([{ name: 'gpu-0', taints: taints(1) }]);
    const created = await call('POST', SLICES, sent);
    const stored = created.body;

    nowMs += 5 * 60_000;
    const same = await call('PUT', `${SLICES}/s`, stored);
    expect(same.body.metadata).toEqual(stored.metadata);

    const resent = await call('PUT', `${SLICES}/s`, { ...stored, spec: sent.spec });
    expect(resent.status).toBe(200);
    expect(resent.body.metadata).toMatchObject({ generation: 2 });
    expect(storedTaints(resent.body)).toEqual([
      [{ key: 'example.com/t0', effect: 'NoSchedule', timeAdded: '2026-03-01T10:05:00Z' }],
    ]);

    // Server-side apply defaults the merged object too: re-applying the same configuration
    // without timeAdded writes again.
    nowMs += 60_000;
    const applied = await call(
      'PATCH',
      `${SLICES}/s${APPLY}`,
      sent,
      'application/apply-patch+yaml',
    );
    expect(applied.status).toBe(200);
    expect(applied.body.metadata).toMatchObject({ generation: 3 });
    expect(storedTaints(applied.body)).toEqual([
      [{ key: 'example.com/t0', effect: 'NoSchedule', timeAdded: '2026-03-01T10:06:00Z' }],
    ]);
  });

  it('with DRADeviceTaints off, taints are dropped before validation, so bad ones pass', async () => {
    await start({ DRADeviceTaints: false });
    const created = await call(
      'POST',
      SLICES,
      slice([{ name: 'gpu-0', taints: [{ key: '', effect: 'PreferNoSchedule' }] }]),
    );
    expect(created.status).toBe(201);
    expect(storedTaints(created.body)).toEqual([undefined]);
  });
});
