import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { errorMessage } from '@slicekeeper/errors';

/** One dependency's readiness: ready, or why not. */
/**
 * One readiness check: rejects when not ready; a string it resolves with is a detail shown by
 * `/readyz` under `ok` (e.g. which API version the service speaks).
 */
export type ReadinessCheck = () => Promise<unknown>;

export interface ProbeServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** @defaultValue `'127.0.0.1'` */
  host?: string;
  registry: Registry;
  logger: Logger;
  /** Named checks run by `/readyz`; every one must resolve for the process to be ready. */
  readiness?: Record<string, ReadinessCheck>;
  /** Bound on each readiness check, ms. @defaultValue 2000 */
  readinessTimeoutMs?: number;
}

/**
 * The small HTTP server every process runs beside its real work: `/metrics` (Prometheus text),
 * `/healthz` (the process is alive) and `/readyz` (every readiness check passes; the body names
 * the ones that fail).
 */
export class ProbeServer {
  private readonly server: Server;
  private closing: Promise<void> | undefined;
  private shuttingDown = false;

  constructor(private readonly options: ProbeServerOptions) {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        options.logger.error({ err: error, path: req.url }, 'probe failed');
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  }

  /** Listens; resolves with the URL it listens on. */
  async start(): Promise<string> {
    const { port, host = '127.0.0.1' } = this.options;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.url;
  }

  get url(): string {
    const address = this.server.address() as AddressInfo;
    return `http://${address.address}:${address.port}`;
  }

  /** From now on `/readyz` fails, so that load balancers stop sending work during shutdown. */
  markShuttingDown(): void {
    this.shuttingDown = true;
  }

  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
      this.server.closeAllConnections();
    });
    return this.closing;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, 'text/plain', 'method not allowed\n');
      return;
    }
    switch (path) {
      case '/metrics': {
        const body = await this.options.registry.metrics();
        send(res, 200, this.options.registry.contentType, body);
        return;
      }
      case '/healthz':
        send(res, 200, 'text/plain', 'ok\n');
        return;
      case '/readyz': {
        const { failures, details } = await this.runChecks();
        if (failures.length === 0)
          send(res, 200, 'text/plain', `${['ok', ...details].join('\n')}\n`);
        else send(res, 503, 'text/plain', `${failures.join('\n')}\n`);
        return;
      }
      default:
        send(res, 404, 'text/plain', 'not found\n');
    }
  }

  private async runChecks(): Promise<{ failures: string[]; details: string[] }> {
    if (this.shuttingDown) return { failures: ['shutting down'], details: [] };
    const timeoutMs = this.options.readinessTimeoutMs ?? 2000;
    const checks = Object.entries(this.options.readiness ?? {});
    const results = await Promise.all(
      checks.map(async ([name, check]): Promise<{ failure?: string; detail?: string }> => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            reject(new Error(`no answer within ${timeoutMs}ms`));
          }, timeoutMs);
        });
        try {
          const detail = await Promise.race([check(), timeout]);
          return typeof detail === 'string' ? { detail: `${name}: ${detail}` } : {};
        } catch (error) {
          return { failure: `${name}: ${errorMessage(error)}` };
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return {
      failures: results.flatMap((r) => (r.failure === undefined ? [] : [r.failure])),
      details: results.flatMap((r) => (r.detail === undefined ? [] : [r.detail])),
    };
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
  res.end(body);
}
