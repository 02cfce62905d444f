import { createHash } from 'node:crypto';
import type { JsonObject } from './object-schema';
import type { ResourceType } from './resource-types';

/**
 * A minimal OpenAPI v3 description of the resources this server stores. kubectl reads it to learn
 * that the server validates fields itself (`fieldValidation` on create, update and patch) before
 * it sends `kubectl create -f`; without it kubectl insists on downloading the full v2 schema.
 */

function queryParam(name: string, description: string): JsonObject {
  return { name, in: 'query', description, schema: { type: 'string', uniqueItems: true } };
}

const WRITE_PARAMS = [
  queryParam('dryRun', 'When present, indicates that modifications should not be persisted.'),
  queryParam(
    'fieldManager',
    'fieldManager is a name associated with the actor or entity that is making these changes.',
  ),
  queryParam(
    'fieldValidation',
    'fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.',
  ),
];

function operation(type: ResourceType, action: string, params: JsonObject[]): JsonObject {
  return {
    operationId: `${action}${type.kind}`,
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': {
      group: type.group,
      version: type.version,
      kind: type.kind,
    },
    parameters: params,
    responses: { '200': { description: 'OK' } },
  };
}

function groupVersionPath(type: ResourceType): string {
  return type.group === '' ? `api/${type.version}` : `apis/${type.group}/${type.version}`;
}

/** The OpenAPI v3 document of one group version, e.g. `apis/resource.k8s.io/v1`. */
export function openApiDocument(
  types: readonly ResourceType[],
  groupVersion: string,
): JsonObject | undefined {
  const matching = types.filter((t) => groupVersionPath(t) === groupVersion);
  if (matching.length === 0) return undefined;
  const paths: JsonObject = {};
  for (const type of matching) {
    const collection = `/${groupVersionPath(type)}/${type.resource}`;
    const base = type.namespaced
      ? `/${groupVersionPath(type)}/namespaces/{namespace}/${type.resource}`
      : collection;
    // Read-only types (Pods, Leases: the emulator stores none) describe only their reads.
    const writable = type.readOnly !== true;
    paths[base] = {
      get: operation(type, 'list', []),
      ...(writable
        ? {
            post: operation(type, 'post', WRITE_PARAMS),
            delete: operation(type, 'deletecollection', []),
          }
        : {}),
    };
    paths[`${base}/{name}`] = {
      get: operation(type, 'get', []),
      ...(writable
        ? {
            put: operation(type, 'put', WRITE_PARAMS),
            patch: operation(type, 'patch', [
              ...WRITE_PARAMS,
              queryParam('force', 'Force is going to "force" Apply requests.'),
            ]),
            delete: operation(type, 'delete', []),
          }
        : {}),
    };
    if (type.namespaced) paths[collection] = { get: operation(type, 'list', []) };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.34.0' }, paths };
}

/** GET /openapi/v3: where each group version's document is. */
export function openApiRoot(types: readonly ResourceType[]): JsonObject {
  const paths: JsonObject = {};
  for (const gv of new Set(types.map(groupVersionPath))) {
    const doc = openApiDocument(types, gv);
    const hash = createHash('sha512')
      .update(JSON.stringify(doc))
      .digest('hex')
      .slice(0, 64)
      .toUpperCase();
    paths[gv] = { serverRelativeURL: `/openapi/v3/${gv}?hash=${hash}` };
  }
  return { paths };
}
