import { Counter, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

/** The registration API's own metrics (Node's defaults come with the registry). */
export class ApiMetrics {
  /** Answered requests by method, route template (`unmatched` for 404s) and status code. */
  readonly requests: Counter<'method' | 'route' | 'code'>;
  readonly requestSeconds: Histogram<'method' | 'route'>;
  /**
   * Registration attempts by node and result (`created`, `refreshed`, `refused`). Node names are
   * a bounded label: only authenticated callers can add one, and nodes are at most thousands.
   */
  readonly registrations: Counter<'node' | 'result'>;
  /** Removed registrations by node. */
  readonly removals: Counter<'node'>;

  constructor(registry: Registry) {
    this.requests = new Counter({
      name: 'slicekeeper_api_requests_total',
      help: 'HTTP requests answered, by method, route and status code.',
      labelNames: ['method', 'route', 'code'],
      registers: [registry],
    });
    this.requestSeconds = new Histogram({
      name: 'slicekeeper_api_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method and route.',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    });
    this.registrations = new Counter({
      name: 'slicekeeper_api_registrations_total',
      help: 'Plugin registration attempts, by node and result (created, refreshed, refused).',
      labelNames: ['node', 'result'],
      registers: [registry],
    });
    this.removals = new Counter({
      name: 'slicekeeper_api_removals_total',
      help: 'Plugin registrations removed, by node.',
      labelNames: ['node'],
      registers: [registry],
    });
  }
}
