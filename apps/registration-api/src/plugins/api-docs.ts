import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

/**
 * The OpenAPI document (`/docs/json`, `/docs/yaml`), generated from the routes' zod schemas so
 * it cannot drift from what the API enforces, and a UI at `/docs`.
 */
export const apiDocs = fp(
  async (app: FastifyInstance) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'slicekeeper registration API',
          description:
            'Drivers (or their operators) register DRA plugins here instead of in kubelet’s plugins_registry. Errors are always `{ code, message, details }`.',
          version: '1',
        },
        components: {
          securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
        },
        tags: [
          { name: 'plugins', description: 'The plugin registry' },
          { name: 'probes', description: 'Health, readiness and metrics' },
        ],
      },
      transform: jsonSchemaTransform,
    });
    await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  },
  { name: 'api-docs' },
);
