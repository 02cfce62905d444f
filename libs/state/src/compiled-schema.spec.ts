import fc from 'fast-check';
import { z } from 'zod';
import type { InventorySnapshot, StreamState, SyncStatus } from '@slicekeeper/contracts';
import { CorruptRecordError, decodeRecord } from './codec';
import { CompiledSchema } from './compiled-schema';
import { snapshotRecord, streamStateRecord, syncStatusRecord } from './record-schemas';

const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** A snapshot that sets every field the schema has, somewhere. */
const fullSnapshot: InventorySnapshot = {
  generation: 7,
  receivedAt: '2026-12-07T10:00:00.123+01:00',
  endpoint: 'unix:///var/lib/kubelet/plugins/gpu/dra.sock',
  traceparents: [TRACEPARENT],
  inventory: {
    pools: [
      {
        name: 'node-a',
        generation: 3,
        scope: { kind: 'node-selector', nodeSelector: nodeSelector() },
        devices: [
          {
            name: 'gpu-0',
            health: { status: 'unhealthy', message: 'ECC errors', timeoutSeconds: 30 },
            attributes: {
              index: { int: 0 },
              model: { string: 'H100' },
              mig: { bool: true },
              driver: { version: '1.2.3' },
              ints: { ints: [1, 2] },
              bools: { bools: [true] },
              strings: { strings: ['a'] },
              versions: { versions: ['0.1.0'] },
            },
            capacity: {
              memory: {
                value: '80Gi',
                requestPolicy: {
                  default: '1Gi',
                  validValues: ['1Gi', '2Gi'],
                  validRange: { min: '1Gi', max: '80Gi', step: '1Gi' },
                },
              },
            },
            taints: [{ key: 'k', value: 'v', effect: 'NoSchedule', timeAdded: 'now' }],
            consumesCounters: [{ counterSet: 'set', counters: { memory: { value: '8Gi' } } }],
            nodeName: 'node-a',
            nodeSelector: nodeSelector(),
            allNodes: false,
            allowMultipleAllocations: true,
            bindsToNode: true,
            bindingConditions: ['ready'],
            bindingFailureConditions: ['broken'],
            passThrough: { future: { nested: [1, 'two', null] } },
          },
        ],
        slices: [{ devices: [{ name: 'gpu-1' }], sharedCounters: [counterSet()] }],
        sharedCounters: [counterSet()],
        passThrough: { future: true },
      },
      { name: 'all', scope: { kind: 'all-nodes' }, devices: [] },
      { name: 'per', scope: { kind: 'per-device' }, devices: [] },
      { name: 'n', scope: { kind: 'node' }, devices: [] },
    ],
  },
};

function nodeSelector() {
  return {
    nodeSelectorTerms: [
      {
        matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }],
        matchFields: [{ key: 'metadata.name', operator: 'In' }],
      },
    ],
  };
}

function counterSet() {
  return { name: 'set', counters: { memory: { value: '80Gi' } } };
}

const fullStatus: SyncStatus = {
  outcome: 'invalid',
  snapshotGeneration: 7,
  slices: ['node-a-gpu.example.com-x7k2p'],
  pools: [{ name: 'node-a', generation: 1, sliceCount: 1, devices: 8 }],
  error: 'spec.devices[0].name: must be a DNS label',
  attempt: 2,
  startedAt: '2026-12-07T10:00:00Z',
  finishedAt: '2026-12-07T10:00:00.010Z',
  writes: 1,
  droppedFields: ['devices[0].bindsToNode'],
  problems: [{ field: 'devices[0].name', message: 'must be a DNS label' }],
  problemsOmitted: 3,
  api: 'resource.k8s.io/v1 (1.34)',
  taints: { unreachable: 'tainted', unhealthy: 1, healthUnknown: 0, notApplied: 'why' },
  traceId: '0af7651916cd43dd8448eb211c80319c',
};

const fullStream: StreamState = {
  state: 'backoff',
  endpoint: 'unix:///x.sock',
  since: '2026-12-07T10:00:00Z',
  lastMessageAt: '2024-02-29T23:59:59.5-05:00',
  reconnects: 3,
  error: 'connection refused',
  unreachableSince: '2026-12-07T10:00:01Z',
};

/**
 * Values near the rules' edges, where a translation to JSON Schema could go wrong: dates (leap
 * days, offsets, no zone), counts (fractions, the safe-integer bound, zero), lengths in UTF-16
 * code units (an emoji is two), traceparents and trace ids, enum members and near misses.
 */
const edgeValues: fc.Arbitrary<unknown> = fc.constantFrom(
  '2026-12-07T10:00:00Z',
  '2023-02-29T00:00:00Z',
  '2024-02-29T00:00:00+01:00',
  '2026-12-07T10:00:00',
  '2026-12-07T10:00Z',
  '2026-12-07 10:00:00Z',
  '2026-13-01T00:00:00Z',
  0,
  1,
  -1,
  1.5,
  2 ** 53 - 1,
  2 ** 53,
  86_400,
  86_401,
  '😀'.repeat(512),
  '😀'.repeat(513),
  'a'.repeat(1024),
  'a'.repeat(1025),
  TRACEPARENT,
  TRACEPARENT.toUpperCase(),
  `${TRACEPARENT}\n`,
  '0af7651916cd43dd8448eb211c80319c',
  'streaming',
  'Streaming',
  'synced',
  'node',
  'tainted',
  null,
  [],
  {},
  Array.from({ length: 33 }, () => TRACEPARENT),
  Array.from({ length: 41 }, () => ({ field: 'f', message: 'm' })),
);

type Json = unknown;

/** Every place in a value: the paths of its objects' members and its arrays' items. */
function places(value: Json, path: (string | number)[] = []): (string | number)[][] {
  const here = [path];
  if (Array.isArray(value)) return here.concat(value.flatMap((v, i) => places(v, [...path, i])));
  if (typeof value === 'object' && value !== null) {
    return here.concat(Object.entries(value).flatMap(([k, v]) => places(v, [...path, k])));
  }
  return here;
}

interface Mutation {
  place: number;
  kind: 'replace' | 'delete' | 'add';
  name: string;
  value: unknown;
}

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  place: fc.nat(),
  kind: fc.constantFrom('replace', 'delete', 'add'),
  name: fc.constantFrom('extra', 'inventory', 'rejected', 'int', 'value', '__proto__'),
  value: fc.oneof(edgeValues, fc.jsonValue({ maxDepth: 2 })),
});

/** The value with one member or item replaced, deleted, or one member added. */
function mutate(value: Json, mutation: Mutation): Json {
  const copy = structuredClone(value);
  const all = places(copy);
  const path = all[mutation.place % all.length] ?? [];
  if (path.length === 0) return mutation.kind === 'replace' ? mutation.value : copy;
  const parent = path.slice(0, -1).reduce<Json>((at, key) => (at as never)[key], copy) as Record<
    string | number,
    unknown
  >;
  const last = path[path.length - 1] as string | number;
  if (mutation.kind === 'replace') parent[last] = mutation.value;
  else if (mutation.kind === 'delete' && Array.isArray(parent)) parent.splice(last as number, 1);
  else if (mutation.kind === 'delete') Reflect.deleteProperty(parent, last);
  const target = parent[last];
  if (mutation.kind === 'add' && typeof target === 'object' && target !== null) {
    Object.defineProperty(target, mutation.name, {
      value: mutation.value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return copy;
}

describe('CompiledSchema', () => {
  const cases: [string, CompiledSchema<unknown>, Json][] = [
    ['a snapshot', snapshotRecord as CompiledSchema<unknown>, fullSnapshot],
    [
      'a rejected snapshot',
      snapshotRecord as CompiledSchema<unknown>,
      { generation: 1, receivedAt: '2026-12-07T10:00:00Z', endpoint: 'e', rejected: 'too big' },
    ],
    ['a sync status', syncStatusRecord as CompiledSchema<unknown>, fullStatus],
    ['a stream state', streamStateRecord as CompiledSchema<unknown>, fullStream],
  ];

  it.each(cases)('accepts %s that sets every field', (_, schema, value) => {
    expect(schema.zod.safeParse(value).success).toBe(true);
    expect(schema.accepts(value)).toBe(true);
  });

  // Never more than zod; and the same, but for a member named `__proto__`, which zod's records
  // drop from what they return and ajv refuses (zod then decodes the record).
  it.each(cases)(
    'accepts what zod accepts and nothing else, for %s changed in up to three places',
    (_, schema, value) => {
      fc.assert(
        fc.property(fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (mutations) => {
          const changed = mutations.reduce(mutate, value);
          const accepted = schema.accepts(changed);
          const zodAccepted = schema.zod.safeParse(changed).success;
          if (accepted) expect(zodAccepted).toBe(true);
          if (!mutations.some((m) => m.kind === 'add' && m.name === '__proto__')) {
            expect(accepted).toBe(zodAccepted);
          }
        }),
        { numRuns: 400 },
      );
    },
  );

  it('names the field and the rule of a record it refuses, as zod does', () => {
    const raw = JSON.stringify({ ...fullStream, reconnects: -1 });
    expect(() => decodeRecord(streamStateRecord, raw, 'stream state of node-a/gpu')).toThrow(
      CorruptRecordError,
    );
    expect(() => decodeRecord(streamStateRecord, raw, 'stream state of node-a/gpu')).toThrow(
      /corrupt stream state of node-a\/gpu: .*reconnects.*>=0/s,
    );
  });

  it('counts lengths in UTF-16 code units, as zod does', () => {
    const [pool] = fullSnapshot.inventory?.pools ?? [];
    const [device] = pool?.devices ?? [];
    const withMessage = (message: string) => ({
      ...fullSnapshot,
      inventory: {
        pools: [{ ...pool, devices: [{ ...device, health: { status: 'unknown', message } }] }],
      },
    });
    expect(snapshotRecord.accepts(withMessage('😀'.repeat(512)))).toBe(true);
    expect(snapshotRecord.accepts(withMessage('😀'.repeat(513)))).toBe(false);
    expect(snapshotRecord.zod.safeParse(withMessage('😀'.repeat(513))).success).toBe(false);
  });

  it('refuses a snapshot with both outcomes or neither: the refinement runs', () => {
    const { inventory } = fullSnapshot;
    expect(snapshotRecord.accepts({ ...fullSnapshot, rejected: 'x' })).toBe(false);
    expect(snapshotRecord.accepts({ ...fullSnapshot, inventory: undefined })).toBe(false);
    expect(snapshotRecord.accepts({ ...fullSnapshot, inventory })).toBe(true);
  });

  it.each([
    ['a transform', z.object({ n: z.string().transform((s) => s.length) }).strict()],
    ['a default', z.object({ n: z.string().default('x') }).strict()],
    ['trimming', z.object({ n: z.string().trim() }).strict()],
    ['an object that strips unknown keys', z.object({ n: z.string() })],
    ['a pattern with flags', z.object({ n: z.string().regex(/^a$/i) }).strict()],
    ['a nested refinement', z.object({ n: z.string().refine((s) => s !== '') }).strict()],
    [
      'a root refinement without its predicate',
      z
        .object({})
        .strict()
        .refine(() => true),
    ],
    ['a record with checked keys', z.record(z.string().min(2), z.string())],
    ['a date', z.object({ d: z.date() }).strict()],
  ])('refuses to compile a schema with %s', (_, schema) => {
    expect(() => new CompiledSchema(schema as z.ZodType)).toThrow(/cannot compile|refinement/);
  });
});
