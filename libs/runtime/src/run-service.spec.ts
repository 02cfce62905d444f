import { Writable } from 'node:stream';
import { ConfigError, TRACING_OFF } from '@slicekeeper/config';
import { runService } from './run-service';
import type { RunServiceOptions, ServiceConfig, ServiceParts } from './run-service';

const config: ServiceConfig = {
  ...TRACING_OFF,
  LOG_LEVEL: 'info',
  // Nothing listens here; these tests open no connection.
  REDIS_URL: 'redis://127.0.0.1:1',
  REDIS_TLS: false,
  SHUTDOWN_TIMEOUT: 5000,
  MEMORY_REDUCE_INTERVAL: 0,
};

/** runService with its exit, stderr and log lines captured, and no signal handlers. */
function run(options: Partial<RunServiceOptions<ServiceConfig>>) {
  const exits: number[] = [];
  const stderr: string[] = [];
  const logs: Record<string, unknown>[] = [];
  const running = runService<ServiceConfig>({
    service: 'test-service',
    loadConfig: () => config,
    build: () => ({ start: () => undefined, close: [] }),
    exit: (code) => exits.push(code),
    stderr: { write: (text: string) => stderr.push(text) },
    logDestination: new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        callback();
      },
    }),
    signals: [],
    ...options,
  });
  return { running, exits, stderr, logs };
}

describe('runService', () => {
  describe('a failed start', () => {
    it('reports a bad config on stderr, every bad variable named, and exits 1', async () => {
      const { running, exits, stderr } = run({
        loadConfig: () => {
          throw new ConfigError(['REDIS_URL: required', 'PROBE_PORT: must be a port (got "x")']);
        },
      });

      expect(await running).toBeUndefined();
      expect(stderr).toEqual([
        'test-service: invalid configuration:\n' +
          '  REDIS_URL: required\n' +
          '  PROBE_PORT: must be a port (got "x")\n',
      ]);
      expect(exits).toEqual([1]);
    });

    it('reports an error of the build as one line with its message, no stack', async () => {
      const { running, exits, stderr } = run({
        build: () => {
          throw new Error('read token file /etc/tokens.json: ENOENT');
        },
      });

      expect(await running).toBeUndefined();
      expect(stderr).toEqual(['test-service: read token file /etc/tokens.json: ENOENT\n']);
      expect(exits).toEqual([1]);
    });

    it('closes the probe server when the service fails to start', async () => {
      let probeUrl: string | undefined;
      const { running, exits, stderr } = run({
        build: () => ({
          probes: { port: 0 },
          start: (started) => {
            probeUrl = started.probeUrl;
            return Promise.reject(new Error('listen EADDRINUSE: address already in use'));
          },
          close: [],
        }),
      });

      expect(await running).toBeUndefined();
      expect(stderr).toEqual(['test-service: listen EADDRINUSE: address already in use\n']);
      expect(exits).toEqual([1]);
      expect(probeUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      await expect(fetch(`${probeUrl ?? ''}/healthz`)).rejects.toThrow();
    });
  });

  describe('shutdown', () => {
    it("closes the service's parts in its order, then the probe server, and exits 0", async () => {
      const events: string[] = [];
      let probeUrl = '';
      const readyz = async () => {
        const res = await fetch(`${probeUrl}/readyz`);
        return `${res.status} ${(await res.text()).trim()}`;
      };
      const parts: ServiceParts = {
        probes: { port: 0, readiness: { work: () => Promise.resolve() } },
        start: (started) => {
          probeUrl = started.probeUrl ?? '';
          events.push('started');
        },
        close: [
          {
            // Intake stops first, while the probes still answer, already not ready.
            close: async () => {
              events.push(`close intake (readyz: ${await readyz()})`);
            },
          },
          {
            close: () => {
              events.push('close work');
              return Promise.resolve();
            },
          },
        ],
      };
      const { running, exits, stderr, logs } = run({ build: () => parts });
      const service = await running;
      expect(await readyz()).toBe('200 ok');

      await service?.shutdown();

      expect(events).toEqual(['started', 'close intake (readyz: 503 shutting down)', 'close work']);
      await expect(fetch(`${probeUrl}/healthz`)).rejects.toThrow();
      expect(exits).toEqual([0]);
      expect(stderr).toEqual([]);
      expect(logs.map((line) => [line.service, line.msg])).toEqual([
        ['test-service', 'shutting down'],
        ['test-service', 'stopped'],
      ]);
    });

    it('exits 1 when a part fails to close', async () => {
      const { running, exits } = run({
        build: () => ({
          start: () => undefined,
          close: [{ close: () => Promise.reject(new Error('drain failed')) }],
        }),
      });

      await (await running)?.shutdown();

      expect(exits).toEqual([1]);
    });
  });
});
