import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { errorMessage } from '@slicekeeper/errors';
import { HttpError } from '../http-error';
import { isRedisUnavailable } from '../plugins/error-handler';
import { errorSchema } from '../schemas/error';

export interface HealthRoutesOptions {
  /** Resolves when Redis answers; `/readyz` fails while it does not. */
  pingRedis: () => Promise<unknown>;
  registry: Registry;
  /** Bound on the Redis ping, ms. @defaultValue 2000 */
  readinessTimeoutMs?: number;
}

const okSchema = z.object({ status: z.literal('ok') }).strict();

/**
 * `/healthz`, `/readyz` and `/metrics` on the API port itself rather than on a separate
 * ProbeServer: the API is one stateless Deployment behind a Service, so probing the port that
 * serves the API checks what clients get, and readiness fails as soon as fastify starts closing
 * (it answers 503 to new requests then). They need no token, as kubelet and Prometheus have
 * none; nothing they expose is secret beyond node names in metrics labels.
 */
export function healthRoutes(app: FastifyInstance, options: HealthRoutesOptions): Promise<void> {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const timeoutMs = options.readinessTimeoutMs ?? 2000;

  routes.get(
    '/healthz',
    { schema: { tags: ['probes'], summary: 'The process is alive', response: { 200: okSchema } } },
    () => ({ status: 'ok' as const }),
  );

  routes.get(
    '/readyz',
    {
      schema: {
        tags: ['probes'],
        summary: 'The API can serve requests (Redis answers)',
        response: { 200: okSchema, 503: errorSchema },
      },
    },
    async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          options.pingRedis(),
          new Promise((_, reject) => {
            timer = setTimeout(() => {
              reject(new Error(`no answer within ${timeoutMs}ms`));
            }, timeoutMs);
          }),
        ]);
      } catch (error) {
        const reason = isRedisUnavailable(error) ? 'unavailable' : errorMessage(error);
        throw new HttpError(503, 'not-ready', `redis: ${reason}`);
      } finally {
        clearTimeout(timer);
      }
      return { status: 'ok' as const };
    },
  );

  routes.get(
    '/metrics',
    {
      schema: {
        tags: ['probes'],
        summary: 'Prometheus metrics',
        response: { 200: { content: { 'text/plain': { schema: z.string() } } } },
      },
    },
    async (_request, reply) => {
      const body = await options.registry.metrics();
      return reply
        .type(options.registry.contentType)
        .serializer((payload: unknown) => String(payload))
        .send(body);
    },
  );
  return Promise.resolve();
}
