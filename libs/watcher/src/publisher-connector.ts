import type { DriverInventory } from '@slicekeeper/contracts';
import type { SlicekeeperError } from '@slicekeeper/errors';

/** What a stream reports. At most one of `end`/`error` is called, and nothing after it. */
export interface InventoryStreamHandlers {
  /** A complete inventory arrived; it replaces the previous one. */
  message(inventory: DriverInventory): void;
  /** The plugin ended the stream cleanly (EOF). */
  end(): void;
  /** The stream failed or could not be opened; `code: 'unimplemented'` when the plugin does not serve it. */
  error(error: SlicekeeperError): void;
}

/** An open `WatchResources` call. */
export interface InventoryStream {
  /** Ends the call; no handler is called afterwards. Idempotent. */
  cancel(): void;
}

export interface WatchRequest {
  /** The registered endpoint: `unix:///path` or `host:port`. */
  endpoint: string;
  /** The node the stream is held for; empty for a cluster-scoped plugin. */
  nodeName: string;
}

/**
 * Opens a plugin's inventory stream. The gRPC implementation is {@link createGrpcConnector};
 * tests pass a scripted one. Handlers are never called synchronously from `connect`.
 */
export type PublisherConnector = (
  request: WatchRequest,
  handlers: InventoryStreamHandlers,
) => InventoryStream;
