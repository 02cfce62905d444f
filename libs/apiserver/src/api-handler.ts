import { apiErrors } from './api-error';
import { create } from './create-handler';
import { deleteCollection, deleteNamed } from './delete-handler';
import type {
  ApiHandlerOptions,
  ApiRequest,
  ApiResult,
  HandlerContext,
  WatchResult,
} from './handler-context';
import { patch } from './patch-handler';
import { get, list } from './read-handler';
import { update } from './update-handler';
import { watch } from './watch-handler';

export type {
  ApiHandlerOptions,
  ApiRequest,
  ApiResult,
  ResponseFormat,
  WatchResult,
} from './handler-context';

/**
 * The REST semantics of kube-apiserver's generic registry for the resources this server stores,
 * one verb family per module: reads (`read-handler`), watch (`watch-handler`), create
 * (`create-handler`), update and `/status` (`update-handler`), patch and apply
 * (`patch-handler`), delete and deletecollection (`delete-handler`). Bodies and options are
 * decoded in `request-decoding`, responses encoded in `response-encoding`.
 */
export class ApiHandler {
  private readonly ctx: HandlerContext;

  constructor(options: ApiHandlerOptions) {
    this.ctx = options;
  }

  handle(req: ApiRequest): ApiResult | WatchResult | Promise<ApiResult | WatchResult> {
    if (req.type.readOnly === true && !['get', 'list', 'watch'].includes(req.verb))
      throw apiErrors.methodNotAllowed();
    const { ctx } = this;
    switch (req.verb) {
      case 'get':
        return get(ctx, req);
      case 'list':
        return list(ctx, req);
      case 'watch':
        return watch(ctx, req);
      case 'create':
        return create(ctx, req);
      case 'update':
        return update(ctx, req);
      case 'patch':
        return patch(ctx, req);
      case 'delete':
        return deleteNamed(ctx, req);
      case 'deletecollection':
        return deleteCollection(ctx, req);
      default:
        throw apiErrors.methodNotAllowed();
    }
  }
}
