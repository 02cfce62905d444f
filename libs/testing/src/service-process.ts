import { SupervisedProcess, appCommand } from '@slicekeeper/local-stack';

export interface ServiceProcessOptions {
  /** The app under apps/, e.g. `slice-syncer`. */
  app: string;
  /** Settings on top of the test's own environment. */
  env: Record<string, string>;
  /** Copies the service's log lines here (e.g. for a failing test's output). */
  onLine?: (line: string) => void;
}

/**
 * A slicekeeper app run as its own process, as in production, from its TypeScript sources,
 * with the test's environment and `env`. It stays in the test's process group (a Ctrl-C stops
 * it too), and `waitForLog` finds every entry it ever logged.
 */
export class ServiceProcess extends SupervisedProcess {
  constructor(options: ServiceProcessOptions) {
    super({
      name: options.app,
      ...appCommand(options.app),
      env: { ...process.env, ...options.env },
      onLine: options.onLine,
      keptLogEntries: Number.POSITIVE_INFINITY,
    });
  }
}

/** Reads one sample of a Prometheus metric from a /metrics URL (the first series that matches). */
export async function readMetric(metricsUrl: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const prefix = labels === '' ? name : `${name}{${labels}`;
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`${prefix} `) || l.startsWith(labels === '' ? `${name}{` : prefix));
  if (line === undefined) throw new Error(`no metric ${prefix} at ${metricsUrl}`);
  return Number(line.split(' ').at(-1));
}
