import { apiErrors } from './api-error';
import { existingObject } from './handler-context';
import type { ApiRequest, ApiResult, HandlerContext } from './handler-context';
import {
  INCONSISTENT_CONTINUE,
  TOO_LARGE_RV_WAIT_MS,
  decodeContinue,
  encodeContinue,
  matcher,
  parseRv,
  pinned,
  scope,
  selectors,
  validateListOptions,
} from './list-options';
import type { JsonObject } from './object-schema';
import { ExpiredError, objectKey } from './object-store';
import { render, renderList } from './response-encoding';

/** The reads: get of one object, and list with selectors, versions and pages. */

/**
 * A get with a resourceVersion is served from the watch cache once it has caught up with it
 * (`cacher/delegator.go` `Get`): a malformed one is the versioner's error, one the cache does not
 * reach in time is "Too large resource version".
 */
export function get(ctx: HandlerContext, req: ApiRequest): ApiResult | Promise<ApiResult> {
  const rv = parseRv(req.query.get('resourceVersion') ?? '');
  const answer = () => render(ctx, req, existingObject(ctx, req), 200);
  if (rv <= ctx.store.resourceVersion) return answer();
  return ctx.store.waitForResourceVersion(rv, TOO_LARGE_RV_WAIT_MS).then((reached) => {
    if (!reached) throw apiErrors.tooLargeResourceVersion(rv, ctx.store.resourceVersion);
    return answer();
  });
}

export async function list(ctx: HandlerContext, req: ApiRequest): Promise<ApiResult> {
  validateListOptions(req, false);
  const { labels, fields } = selectors(req);
  const q = req.query;
  const rvText = q.get('resourceVersion') ?? '';
  const match = q.get('resourceVersionMatch') ?? '';
  const cont = q.get('continue') ?? '';
  // resourceVersion=0 is served from the watch cache, which ignores limit (the cacher's
  // `hasLimit := pred.Limit > 0 && listRV != 0`): everything at once, no continue token.
  const limitText = rvText === '0' && cont === '' ? '' : (q.get('limit') ?? '');
  const limit = limitText === '' ? 0 : Number.parseInt(limitText, 10);
  let atRv: number | undefined;
  let after: string | undefined;
  if (cont !== '') {
    if (rvText !== '' && rvText !== '0')
      throw apiErrors.badRequest('specifying resource version is not allowed when using continue');
    const token = decodeContinue(cont);
    // The token's key is relative to the listed prefix, as etcd's is: the name in a namespace.
    after = objectKey(req.namespace, token.after);
    if (token.rv > 0) {
      if (token.rv < ctx.store.historyFloor) {
        const error = apiErrors.expired(INCONSISTENT_CONTINUE);
        error.body.metadata.continue = encodeContinue(-1, token.after);
        throw error;
      }
      atRv = token.rv;
    }
  } else if (rvText !== '' && rvText !== '0') {
    const limited = Number.parseInt(q.get('limit') ?? '', 10) > 0;
    const rv = parseRv(rvText, match === 'Exact' || (match === '' && limited));
    if (rv > ctx.store.resourceVersion) {
      const reached = await ctx.store.waitForResourceVersion(rv, TOO_LARGE_RV_WAIT_MS);
      if (!reached) throw apiErrors.tooLargeResourceVersion(rv, ctx.store.resourceVersion);
    }
    if (match === 'Exact') atRv = rv;
  }
  const matchFn = matcher(labels, fields);
  let result;
  try {
    result = ctx.store.list(req.type.resource, {
      ...scope(req),
      ...(atRv === undefined ? {} : { atRv }),
      ...(after === undefined ? {} : { after }),
      ...(limit > 0 ? { limit } : {}),
      ...(matchFn === undefined ? {} : { match: matchFn }),
      pinned: pinned(req, fields),
      filtered: matchFn !== undefined,
    });
  } catch (error) {
    if (error instanceof ExpiredError) throw apiErrors.expired(error.message);
    throw error;
  }
  const listMeta: JsonObject = { resourceVersion: String(result.rv) };
  if (result.continueAfter !== undefined) {
    const namespacePrefix = req.namespace === '' ? '' : `${req.namespace}/`;
    listMeta.continue = encodeContinue(
      result.rv,
      result.continueAfter.slice(namespacePrefix.length),
    );
    if (result.remainingItemCount !== undefined)
      listMeta.remainingItemCount = result.remainingItemCount;
  }
  return renderList(ctx, req, result.items, listMeta);
}
