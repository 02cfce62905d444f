import { errorMessage, isTerminal } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { Backoff, systemClock } from '@slicekeeper/time';
import type { Clock } from '@slicekeeper/time';
import { RESOURCE_SLICE_API_VERSION } from '@slicekeeper/slices';
import type { ResourceSlice } from '@slicekeeper/slices';
import { classifyKubeError, kubeErrorCode } from './classify-kube-error';
import { callKube } from './kube-request';
import type { OnKubeRequest } from './kube-request';
import type { KubeTransport } from './kube-transport';
import { MalformedResponseError } from './resource-slice-json';

/** The DRA API group. */
export const RESOURCE_GROUP = 'resource.k8s.io';

/**
 * The versions of resource.k8s.io slicekeeper publishes with, most preferred first: v1 (served
 * from 1.34), v1beta2 (1.33), v1beta1 (1.32).
 */
export const resourceApiVersions = ['v1', 'v1beta2', 'v1beta1'] as const;
export type ResourceApiVersion = (typeof resourceApiVersions)[number];

/** The API server's release, from `/version`. */
export interface ServerRelease {
  major: number;
  minor: number;
  /** e.g. `v1.34.1`. */
  gitVersion: string;
}

/** What discovery found: the version slicekeeper publishes with, and the server's release. */
export interface ResourceApi {
  version: ResourceApiVersion;
  /** Every resource.k8s.io version the server serves, as it listed them. */
  served: string[];
  release: ServerRelease;
}

/** `resource.k8s.io/<version>`. */
export function resourceGroupVersion(version: ResourceApiVersion): string {
  return `${RESOURCE_GROUP}/${version}`;
}

/** The collection of ResourceSlices in `version`. */
export function slicesCollection(version: ResourceApiVersion): string {
  return `/apis/${RESOURCE_GROUP}/${version}/resourceslices`;
}

/** How a release and a version read in logs, statuses and `/readyz`. */
export function describeResourceApi(api: ResourceApi): string {
  return `${resourceGroupVersion(api.version)} (Kubernetes ${api.release.gitVersion})`;
}

export interface DiscoverOptions {
  transport: KubeTransport;
  /** Per-request timeout, ms. @defaultValue 30000 */
  requestTimeoutMs?: number;
  onRequest?: OnKubeRequest;
}

/**
 * Asks the API server which resource.k8s.io versions it serves (`GET /apis/resource.k8s.io`)
 * and its release (`GET /version`), and picks the newest version slicekeeper speaks. Fails with
 * an error that says what is missing when the server serves none of them.
 */
export async function discoverResourceApi(options: DiscoverOptions): Promise<ResourceApi> {
  const call = (path: string, resource: string, context: string) =>
    callKube({
      transport: options.transport,
      timeoutMs: options.requestTimeoutMs ?? 30_000,
      onRequest: options.onRequest,
      verb: 'get',
      resource,
      context,
      request: { method: 'GET', path },
    });
  const release = toRelease(await call('/version', 'version', 'get API server version'));
  let group: unknown;
  try {
    group = await call(`/apis/${RESOURCE_GROUP}`, 'discovery', `discover ${RESOURCE_GROUP}`);
  } catch (error) {
    if (kubeErrorCode(error) !== 'not-found') throw error;
    group = { versions: [] };
  }
  const served = servedVersions(group);
  const version = resourceApiVersions.find((v) => served.includes(v));
  if (version === undefined) {
    throw classifyKubeError(
      new MalformedResponseError(
        `the API server (Kubernetes ${release.gitVersion}) serves no ${RESOURCE_GROUP} version ` +
          `slicekeeper publishes with (${resourceApiVersions.join(', ')}; it serves ` +
          `${served.length === 0 ? 'none' : served.join(', ')}): DRA needs Kubernetes 1.32 or ` +
          `later with the ${RESOURCE_GROUP} API enabled`,
      ),
      `discover ${RESOURCE_GROUP}`,
    );
  }
  return { version, served, release };
}

/**
 * {@link discoverResourceApi}, asked again with backoff (1 s doubling to 30 s) while the API
 * server cannot be reached: a syncer started before its API server waits for it. A terminal
 * answer (no version served, 403) is thrown.
 */
export async function awaitResourceApi(
  options: DiscoverOptions & { logger: Pick<Logger, 'warn'>; clock?: Clock },
): Promise<ResourceApi> {
  const clock = options.clock ?? systemClock;
  const backoff = new Backoff({ initialMs: 1000, maxMs: 30_000 });
  for (;;) {
    try {
      return await discoverResourceApi(options);
    } catch (error) {
      if (isTerminal(error)) throw error;
      const delayMs = backoff.next();
      options.logger.warn({ err: errorMessage(error), delayMs }, 'discovery failed, retrying');
      await new Promise<void>((resolve) => clock.setTimer(resolve, delayMs));
    }
  }
}

function toRelease(json: unknown): ServerRelease {
  const record = json as { major?: unknown; minor?: unknown; gitVersion?: unknown } | null;
  const major = leadingInt(record?.major);
  // Distributions append to the minor version (`"34+"`).
  const minor = leadingInt(record?.minor);
  if (
    !Number.isInteger(major) ||
    !Number.isInteger(minor) ||
    typeof record?.gitVersion !== 'string'
  ) {
    throw classifyKubeError(
      new MalformedResponseError('/version answered without major, minor and gitVersion'),
      'get API server version',
    );
  }
  return { major, minor, gitVersion: record.gitVersion };
}

function leadingInt(value: unknown): number {
  return typeof value === 'string' ? Number.parseInt(value, 10) : Number.NaN;
}

function servedVersions(json: unknown): string[] {
  const versions = (json as { versions?: unknown } | null)?.versions;
  if (!Array.isArray(versions)) {
    throw classifyKubeError(
      new MalformedResponseError(`the ${RESOURCE_GROUP} APIGroup has no versions list`),
      `discover ${RESOURCE_GROUP}`,
    );
  }
  return versions
    .map((v) => (v as { version?: unknown } | null)?.version)
    .filter((v): v is string => typeof v === 'string');
}

type Json = Record<string, unknown>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A ResourceSlice in the planner's shape (resource.k8s.io/v1) as `version` spells it: v1beta2
 * has v1's shape; v1beta1 keeps every field of a device but its name under `basic`.
 *
 * Kubernetes adds a ResourceSlice field to every version it serves at once (staging
 * `k8s.io/api/resource/{v1,v1beta2,v1beta1}/types.go`): in 1.34–1.36 consumable capacity
 * (`allowMultipleAllocations`, `capacity[*].requestPolicy`), binding conditions, per-device node
 * selection and, from 1.36, list attributes exist in all three, spelled alike, v1beta1's inside
 * `basic` (its `DeviceCapacity` is `{value, requestPolicy}` too). So no field is left out of a
 * version here; a field the server's release lacks, or whose gate is off, is dropped by the
 * server and reported as dropped from its answer. A device's pass-through members go where a
 * newer release's device fields go, under `basic` in v1beta1; a slice's stay in `spec`.
 */
export function sliceToWire(slice: ResourceSlice, version: ResourceApiVersion): unknown {
  const apiVersion = resourceGroupVersion(version);
  if (version !== 'v1beta1') return { ...slice, apiVersion };
  const devices = slice.spec.devices;
  if (devices === undefined) return { ...slice, apiVersion };
  return {
    ...slice,
    apiVersion,
    spec: {
      ...slice.spec,
      devices: devices.map((device) => {
        const { name, ...basic } = device;
        return { name, basic };
      }),
    },
  };
}

/** The inverse of {@link sliceToWire}: what the server sent in `version`, in v1's shape. */
export function sliceFromWire(json: unknown, version: ResourceApiVersion): unknown {
  if (!isRecord(json)) return json;
  const v1 = { ...json, apiVersion: RESOURCE_SLICE_API_VERSION };
  if (version !== 'v1beta1') return v1;
  const spec = json.spec;
  if (!isRecord(spec) || !Array.isArray(spec.devices)) return v1;
  return {
    ...v1,
    spec: {
      ...spec,
      devices: spec.devices.map((device: unknown) => {
        if (!isRecord(device)) return device;
        const { basic, ...rest } = device;
        return isRecord(basic) ? { ...rest, ...basic } : rest;
      }),
    },
  };
}
