/**
 * Planner benchmark (`npm run bench:planner`): plans 10,000 keys of 8 devices each and one key
 * of 4,096 devices, for three situations — first publication, nothing changed (the common
 * resync), one device changed — and prints µs per key and per device.
 *
 * The figures depend on the machine and its load, so the same run also measures a floor: a
 * `structuredClone` and a JSON round trip of the same inputs, work that any planner copying
 * its input would do. Read the planner's cost relative to those, not only in absolute µs.
 * Goal: ≤ 50 µs per 8-device key.
 */
import type { Pool } from '@slicekeeper/contracts';
import { planSync } from '../src';
import type { PlanSyncInput, SyncPlan } from '../src';
import { FakeResourceSliceApi } from '../src/testing/fake-resource-slice-api';
import { DRIVER, gpu, gpus } from '../src/testing/fixtures';

const SMALL_KEYS = 10_000;
const SMALL_DEVICES = 8;
const LARGE_DEVICES = 4096;
/** Timed rounds of the planner; the median is reported. */
const ROUNDS = 7;
/** Timed rounds of the floors, which are slower. */
const FLOOR_ROUNDS = 3;
/** Keys the floors of the 10,000-key workloads are measured on (per-key cost is the same). */
const FLOOR_KEYS = 2_000;
/** Target for one 8-device key, µs. */
const GOAL_US_PER_KEY = 50;

interface Workload {
  label: string;
  inputs: PlanSyncInput[];
  devicesPerKey: number;
  /** Repetitions of the input list per round, so that a round takes long enough to time. */
  repeat: number;
}

interface Scenario {
  name: string;
  /** The desired devices of key `k`, given what was published. */
  devices: (count: number) => Pool['devices'];
  published: boolean;
}

const scenarios: Scenario[] = [
  { name: 'create', devices: (count) => gpus(count), published: false },
  { name: 'unchanged', devices: (count) => gpus(count), published: true },
  {
    name: 'one device changed',
    devices: (count) => [
      ...gpus(count - 1),
      gpu(count - 1, { capacity: { memory: { value: '40Gi' } } }),
    ],
    published: true,
  },
];

function keyInput(key: number, devices: Pool['devices'], existing: PlanSyncInput['existing']) {
  const node = `node-${key}`;
  return {
    node,
    nodeUid: `00000000-0000-4000-8000-${key.toString(16).padStart(12, '0')}`,
    driver: DRIVER,
    pools: [{ name: node, scope: { kind: 'node' as const }, devices }],
    existing,
  };
}

/** What the API server lists for a key after publishing `count` GPUs (JSON, as on the wire). */
function publishedSlices(key: number, count: number): PlanSyncInput['existing'] {
  const api = new FakeResourceSliceApi();
  api.apply(planSync(keyInput(key, gpus(count), [])));
  return api.list();
}

function workloads(): Workload[] {
  const result: Workload[] = [];
  const smallPublished = Array.from({ length: SMALL_KEYS }, (_, key) =>
    publishedSlices(key, SMALL_DEVICES),
  );
  const largePublished = publishedSlices(0, LARGE_DEVICES);
  for (const scenario of scenarios) {
    result.push({
      label: `${SMALL_KEYS} keys x ${SMALL_DEVICES} devices, ${scenario.name}`,
      inputs: smallPublished.map((existing, key) =>
        keyInput(key, scenario.devices(SMALL_DEVICES), scenario.published ? existing : []),
      ),
      devicesPerKey: SMALL_DEVICES,
      repeat: 1,
    });
  }
  for (const scenario of scenarios) {
    result.push({
      label: `1 key x ${LARGE_DEVICES} devices, ${scenario.name}`,
      inputs: [
        keyInput(0, scenario.devices(LARGE_DEVICES), scenario.published ? largePublished : []),
      ],
      devicesPerKey: LARGE_DEVICES,
      repeat: 5,
    });
  }
  return result;
}

let sink = 0;

function writes(plan: SyncPlan): number {
  return plan.deletes.length + plan.updates.length + plan.creates.length;
}

/** Median µs per key of `work` over `rounds` rounds, after one warm-up round. */
function measure(
  workload: Workload,
  work: (input: PlanSyncInput) => number,
  rounds: number,
): number {
  const timings: number[] = [];
  for (let round = 0; round <= rounds; round++) {
    const start = performance.now();
    for (let r = 0; r < workload.repeat; r++) {
      for (const input of workload.inputs) sink += work(input);
    }
    const elapsedMs = performance.now() - start;
    if (round > 0) timings.push((elapsedMs * 1000) / (workload.inputs.length * workload.repeat));
  }
  timings.sort((a, b) => a - b);
  return timings[Math.floor(timings.length / 2)] ?? Number.NaN;
}

function cell(value: number | string, width: number): string {
  const text = typeof value === 'number' ? value.toFixed(value < 10 ? 2 : 1) : value;
  return text.padStart(width);
}

function main(): void {
  const setupStart = performance.now();
  const all = workloads();
  const setupMs = performance.now() - setupStart;

  console.log(
    `planSync benchmark: node ${process.version}, TypeScript sources through tsx, median of ${ROUNDS} rounds (floors: ${FLOOR_ROUNDS} rounds, first ${FLOOR_KEYS} keys); setup ${(setupMs / 1000).toFixed(1)} s`,
  );
  console.log(
    'floors: the time to structuredClone / JSON round-trip the same input; /clone and /JSON: planner time over floor',
  );
  console.log('');
  const header =
    'workload'.padEnd(44) +
    cell('us/key', 9) +
    cell('us/device', 11) +
    cell('writes/key', 12) +
    cell('clone us/key', 14) +
    cell('JSON us/key', 13) +
    cell('/clone', 8) +
    cell('/JSON', 7);
  console.log(header);
  console.log('-'.repeat(header.length));

  let worstSmall = 0;
  for (const workload of all) {
    const planUs = measure(workload, (input) => writes(planSync(input)), ROUNDS);
    const floorWorkload = { ...workload, inputs: workload.inputs.slice(0, FLOOR_KEYS) };
    const cloneUs = measure(
      floorWorkload,
      (input) => structuredClone(input).pools.length,
      FLOOR_ROUNDS,
    );
    const jsonUs = measure(
      floorWorkload,
      (input) => (JSON.parse(JSON.stringify(input)) as PlanSyncInput).pools.length,
      FLOOR_ROUNDS,
    );
    const first = workload.inputs[0];
    const writesPerKey = first === undefined ? 0 : writes(planSync(first));
    if (workload.devicesPerKey === SMALL_DEVICES) worstSmall = Math.max(worstSmall, planUs);
    console.log(
      workload.label.padEnd(44) +
        cell(planUs, 9) +
        cell(planUs / workload.devicesPerKey, 11) +
        cell(String(writesPerKey), 12) +
        cell(cloneUs, 14) +
        cell(jsonUs, 13) +
        cell(planUs / cloneUs, 8) +
        cell(planUs / jsonUs, 7),
    );
  }
  console.log('');
  const verdict = worstSmall <= GOAL_US_PER_KEY ? 'met' : 'NOT met';
  console.log(
    `goal <= ${GOAL_US_PER_KEY} us per ${SMALL_DEVICES}-device key: ${verdict} (slowest scenario ${worstSmall.toFixed(1)} us)`,
  );
  if (sink === -1) console.log(sink); // keeps the measured work observable
}

main();
