import type { EmulatorUnderTest, Json } from './emulator-requests.test-helper';

/**
 * The objects the emulator's int specs create and the Status bodies they expect, built one way
 * so a spec states only what its case is about.
 */

export const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
export const NODES = '/api/v1/nodes';

/**
 * A valid ResourceSlice of node-a's pool with one device, `gpu-0`; `metadata` and `spec` add to
 * (or replace) its fields.
 */
export function resourceSlice(name: string, extra: { metadata?: Json; spec?: Json } = {}): Json {
  return {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'ResourceSlice',
    metadata: { name, ...extra.metadata },
    spec: {
      driver: 'gpu.example.com',
      nodeName: 'node-a',
      pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
      devices: [{ name: 'gpu-0' }],
      ...extra.spec,
    },
  };
}

/** The Ready condition a kubelet posts, at fixed times. */
export const READY_CONDITION = {
  type: 'Ready',
  status: 'True',
  lastHeartbeatTime: '2026-01-01T00:00:00Z',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  reason: 'KubeletReady',
  message: 'kubelet is posting ready status',
};

/** Creates a Node (with `status` when given) and answers it as stored; fails unless created. */
export async function createNode(
  kube: EmulatorUnderTest,
  name: string,
  status?: Json,
): Promise<Json> {
  const created = await kube.call('POST', NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    ...(status === undefined ? {} : { status }),
  });
  if (created.status !== 201) {
    throw new Error(
      `create Node "${name}": ${String(created.status)} ${JSON.stringify(created.body)}`,
    );
  }
  return created.body;
}

/** A failure Status body as kube-apiserver writes it; `extra` adds `reason` and `details`. */
export function failureStatus(code: number, message: string, extra: Json = {}): Json {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...extra,
    code,
  };
}

/** go-restful's 405, through the server's `serviceErrorHandler`, with empty details. */
export const METHOD_NOT_ALLOWED = failureStatus(
  405,
  'the server does not allow this method on the requested resource',
  { reason: 'MethodNotAllowed', details: {} },
);
