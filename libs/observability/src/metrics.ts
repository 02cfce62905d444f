import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * A prom-client registry for one process, with Node's default metrics and a `service` label on
 * every series. Each process has its own registry (no global state), so that tests can run
 * several services in one process.
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
