import { kubeErrorCode } from './classify-kube-error';
import { callKube } from './kube-request';
import type { OnKubeRequest } from './kube-request';
import type { KubeTransport } from './kube-transport';

export interface KubeEventClientOptions {
  /** The connection of the syncer's other clients (not closed here). */
  transport: KubeTransport;
  /** Called once per API request (verb, `events`, HTTP status or 'error'). */
  onRequest?: OnKubeRequest;
  /** Per-request timeout, ms. @defaultValue 30000 */
  requestTimeoutMs?: number;
}

/** The object an Event is about (events.k8s.io/v1 `regarding`). */
export interface EventRegarding {
  apiVersion: string;
  kind: string;
  name: string;
  /** Empty for a cluster-scoped object. */
  namespace?: string;
  uid: string;
}

/** An Event series: the event happened `count` times, the last at `lastObservedTime`. */
export interface EventSeriesWrite {
  count: number;
  /** MicroTime: RFC 3339 with microseconds. */
  lastObservedTime: string;
}

/** An events.k8s.io/v1 Event as slicekeeper writes it. */
export interface EventWrite {
  apiVersion: 'events.k8s.io/v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  /** MicroTime of the first occurrence. */
  eventTime: string;
  series?: EventSeriesWrite;
  reportingController: string;
  reportingInstance: string;
  /** What was done or failed, UpperCamelCase, ≤ 128 characters. */
  action: string;
  /** Why, UpperCamelCase, ≤ 128 characters. */
  reason: string;
  regarding: EventRegarding;
  /** Human-readable, ≤ 1 kB. */
  note: string;
  type: 'Normal' | 'Warning';
}

const EVENTS = '/apis/events.k8s.io/v1/namespaces';

/**
 * Writes Events with the events.k8s.io/v1 API, as client-go's `tools/events` sink does: POST
 * for a new event, a strategic merge patch of `series` for a repeat. Needs RBAC `create` and
 * `patch` on `events.k8s.io` `events` in the events' namespace. Throws only classified errors.
 */
export class KubeEventClient {
  private readonly transport: KubeTransport;
  private readonly requestTimeoutMs: number;
  private readonly onRequest: OnKubeRequest | undefined;

  constructor(options: KubeEventClientOptions) {
    this.transport = options.transport;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.onRequest = options.onRequest;
  }

  async create(event: EventWrite): Promise<void> {
    const { namespace, name } = event.metadata;
    await callKube({
      transport: this.transport,
      timeoutMs: this.requestTimeoutMs,
      onRequest: this.onRequest,
      verb: 'create',
      resource: 'events',
      context: `create Event "${namespace}/${name}"`,
      name,
      request: {
        method: 'POST',
        path: `${EVENTS}/${encodeURIComponent(namespace)}/events`,
        body: event,
      },
    });
  }

  /**
   * Sets the series of the event named in `event.metadata`; resolves `false` when it does not
   * exist (any more: the API server deletes events an hour after their last write).
   */
  async patchSeries(event: EventWrite, series: EventSeriesWrite): Promise<boolean> {
    const { namespace, name } = event.metadata;
    try {
      await callKube({
        transport: this.transport,
        timeoutMs: this.requestTimeoutMs,
        onRequest: this.onRequest,
        verb: 'patch',
        resource: 'events',
        context: `patch Event "${namespace}/${name}"`,
        name,
        request: {
          method: 'PATCH',
          path: `${EVENTS}/${encodeURIComponent(namespace)}/events/${encodeURIComponent(name)}`,
          contentType: 'application/strategic-merge-patch+json',
          body: { series },
        },
      });
      return true;
    } catch (error) {
      if (kubeErrorCode(error) === 'not-found') return false;
      throw error;
    }
  }
}
