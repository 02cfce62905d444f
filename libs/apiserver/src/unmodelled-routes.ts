import { apiErrors } from './api-error';
import type { ApiError } from './api-error';
import { catalogResource } from './api-catalog';
import type { KubeRelease } from './kube-release';

/**
 * What a request to a resource discovery lists, but the emulator does not model, gets. The real
 * server registers one go-restful route per verb (`staging/src/k8s.io/apiserver/pkg/endpoints/
 * installer.go`), so a method the resource does not take on an existing path is go-restful's 405
 * (`serviceErrorHandler` → `NewGenericServerResponse(405, …)`: "the server does not allow this
 * method on the requested resource", empty details) — a GET of `selfsubjectaccessreviews`, a
 * DELETE of `nodes/x/status`. A verb the resource takes on a named object that cannot exist here
 * is the store's NotFound for the resource (`pods "x" not found`): the emulator holds none of
 * these objects. Anything else (lists, creates, other paths) is left to the caller.
 */

interface ParsedPath {
  readonly groupVersion: string;
  readonly group: string;
  readonly namespaced: boolean;
  readonly namespace: string;
  readonly resource: string;
  readonly name: string;
  readonly subresource: string;
}

function parsePath(path: string): ParsedPath | undefined {
  const parts = path.split('/').filter((p) => p !== '');
  let groupVersion: string;
  let group: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    groupVersion = parts[1] ?? '';
    group = '';
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    group = parts[1] ?? '';
    groupVersion = `${group}/${parts[2] ?? ''}`;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3;
  const namespace = namespaced ? decodeURIComponent(rest[1] ?? '') : '';
  if (namespaced) rest = rest.slice(2);
  if (rest[0] === 'watch' || rest.length > 3) return undefined;
  const [resource = '', rawName = '', subresource = ''] = rest;
  const name = decodeURIComponent(rawName);
  return { groupVersion, group, namespaced, namespace, resource, name, subresource };
}

const COLLECTION_VERBS = ['list', 'create', 'deletecollection'];
const OBJECT_VERBS = ['get', 'update', 'patch', 'delete'];

/** The verb a method names on a path of this shape, as the installer routes it. */
function verbOf(method: string, named: boolean, subresource: boolean): string | undefined {
  if (subresource) {
    const verbs: Record<string, string> = {
      GET: 'get',
      PUT: 'update',
      PATCH: 'patch',
      POST: 'create',
      DELETE: 'delete',
    };
    return verbs[method];
  }
  if (named) {
    const verbs: Record<string, string> = {
      GET: 'get',
      PUT: 'update',
      PATCH: 'patch',
      DELETE: 'delete',
    };
    return verbs[method];
  }
  const verbs: Record<string, string> = { GET: 'list', POST: 'create', DELETE: 'deletecollection' };
  return verbs[method];
}

/**
 * The error for a request to a resource the emulator does not model, or undefined when the
 * path is not one discovery lists (the caller's 404) or the request would need the resource
 * modelled. `exists` says whether a named object of a modelled parent exists (for subresources
 * the emulator does not model; a resource it does not model has none).
 */
export function unmodelledRouteError(
  method: string,
  path: string,
  release: KubeRelease,
  exists: (groupVersion: string, resource: string, namespace: string, name: string) => boolean,
): ApiError | undefined {
  const parsed = parsePath(path);
  if (parsed === undefined) return undefined;
  const { groupVersion, group, resource, name, subresource } = parsed;
  const listed = catalogResource(
    groupVersion,
    subresource === '' ? resource : `${resource}/${subresource}`,
    release,
  );
  if (listed === undefined || listed.namespaced !== parsed.namespaced) return undefined;
  // The installer routes a path shape only for the verbs the resource takes.
  const verb = verbOf(method, name !== '', subresource !== '');
  if (verb === undefined || !listed.verbs.includes(verb)) {
    const shapeServed =
      subresource !== '' ||
      listed.verbs.some((v) => (name === '' ? COLLECTION_VERBS : OBJECT_VERBS).includes(v));
    return shapeServed ? apiErrors.methodNotAllowed() : undefined;
  }
  if (name === '' || exists(groupVersion, resource, parsed.namespace, name)) return undefined;
  return apiErrors.notFound({ group, name: resource }, name);
}
