import { classifyKubeError, kubeErrorCode } from './classify-kube-error';
import { callKube } from './kube-request';
import type { OnKubeRequest } from './kube-request';
import type { KubeTransport } from './kube-transport';
import { withQuery } from './kube-transport';
import { observedConditionOf } from './node-condition-json';
import type { NodeConditionWrite, ObservedCondition } from './node-condition-json';
import { FIELD_MANAGER, MalformedResponseError, nodeMetadataOf } from './resource-slice-json';

export interface KubeNodeStatusClientOptions {
  /** The connection of the syncer's other clients and of its cluster cache (not closed here). */
  transport: KubeTransport;
  /**
   * Called once per API request with the verb (`patch`), the resource (`nodes/status`) and the
   * HTTP status, or 'error' when no response came; for `slicekeeper_kube_requests_total`.
   */
  onRequest?: OnKubeRequest;
  /** Per-request timeout, ms, from sending until the whole body is read. @defaultValue 30000 */
  requestTimeoutMs?: number;
}

/** What a condition write left on the Node. */
export interface PatchedNode {
  resourceVersion: string;
  /** The written condition as the server stored it. */
  condition: ObservedCondition | undefined;
}

const NODES = '/api/v1/nodes';

/**
 * Writes one condition of a Node's status: `PATCH /api/v1/nodes/{name}/status` with a strategic
 * merge patch of `status.conditions`, which merges by `type`, so that the kubelet's conditions
 * and anyone else's are left alone and no read comes first. Needs RBAC `patch` on
 * `nodes/status`, nothing on `nodes`. Throws only classified errors (see
 * {@link classifyKubeError}), e.g. `patch status of Node "node-a": forbidden: …`.
 */
export class KubeNodeStatusClient {
  private readonly transport: KubeTransport;
  private readonly requestTimeoutMs: number;
  private readonly onRequest: KubeNodeStatusClientOptions['onRequest'];

  constructor(options: KubeNodeStatusClientOptions) {
    this.transport = options.transport;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.onRequest = options.onRequest;
  }

  /**
   * Sets `condition` on the Node named `node`; resolves with what the server stored, or
   * undefined when the Node does not exist (404: nothing to write on).
   */
  async patchCondition(
    node: string,
    condition: NodeConditionWrite,
  ): Promise<PatchedNode | undefined> {
    const context = `patch status of Node "${node}"`;
    let json: unknown;
    try {
      json = await callKube({
        transport: this.transport,
        timeoutMs: this.requestTimeoutMs,
        onRequest: this.onRequest,
        verb: 'patch',
        resource: 'nodes/status',
        context,
        name: node,
        request: {
          method: 'PATCH',
          path: withQuery(`${NODES}/${encodeURIComponent(node)}/status`, {
            fieldManager: FIELD_MANAGER,
          }),
          contentType: 'application/strategic-merge-patch+json',
          body: { status: { conditions: [condition] } },
        },
      });
    } catch (error) {
      if (kubeErrorCode(error) === 'not-found') return undefined;
      throw error;
    }
    try {
      const metadata = nodeMetadataOf(json);
      if (metadata === undefined) {
        throw new MalformedResponseError('a Node without name, uid or resourceVersion');
      }
      return { resourceVersion: metadata.resourceVersion, condition: observedConditionOf(json) };
    } catch (error) {
      throw classifyKubeError(error, context);
    }
  }
}
