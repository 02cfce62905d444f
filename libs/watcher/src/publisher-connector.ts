import type { DriverInventory, SyncStatus } from '@slicekeeper/contracts';
import type { SlicekeeperError } from '@slicekeeper/errors';

/** A message slicekeeper cannot use: the driver's bug, not an outage. */
export interface MessageRejection {
  /**
   * Why, for the driver's author: the fields and the rules they break
   * (`pools[0].generation: 9223372036854775807 is outside ...`), or the size and the limit.
   */
  problem: string;
  /**
   * Whether the call ended with it: gRPC ends a call on a message over the size limit or one
   * that does not decode. Otherwise the call stays open and the next message is used normally.
   */
  callEnded: boolean;
  /** The message's `traceparent` as the driver sent it (unchecked), when it decoded and had one. */
  traceparent?: string;
}

/**
 * What a stream reports. At most one of `end`, `error` and a `rejected` that ends the call is
 * called, and nothing after it.
 */
export interface InventoryStreamHandlers {
  /**
   * A complete inventory arrived; it replaces the previous one. `traceparent`: the message's, as
   * the driver sent it (unchecked), when it had one.
   */
  message(inventory: DriverInventory, traceparent?: string): void;
  /** A message arrived that cannot be used; the previous inventory is not replaced. */
  rejected(rejection: MessageRejection): void;
  /** The plugin ended the stream cleanly (EOF). */
  end(): void;
  /** The stream failed or could not be opened; `code: 'unimplemented'` when the plugin does not serve it. */
  error(error: SlicekeeperError): void;
}

/** What became of a `NotifyPublishStatus` call. */
export type NotifyResult =
  | 'delivered'
  /** The plugin does not serve the optional RPC: never asked again on this connection. */
  | 'unimplemented'
  /** Any other failure: the next outcome is sent as usual. */
  | 'failed';

/** An open inventory stream (`WatchResources` or `NodeListAndWatchResources`). */
export interface InventoryStream {
  /** Ends the call; no handler is called afterwards. Idempotent. */
  cancel(): void;
  /**
   * Tells the plugin a sync outcome of its key over the stream's connection
   * (`ResourcePublisher.NotifyPublishStatus`). Never rejects.
   */
  notify(nodeName: string, status: SyncStatus): Promise<NotifyResult>;
}

export interface WatchRequest {
  /** The registered endpoint: `unix:///path` or `host:port`. */
  endpoint: string;
  /** The node the stream is held for; empty for a cluster-scoped plugin. */
  nodeName: string;
  /**
   * The plugin API version agreed at registration (`Registration.version`):
   * `KUBELET_130_PLUGIN_VERSION` opens kubelet 1.30's `v1alpha3.Node/NodeListAndWatchResources`,
   * anything else `ResourcePublisher.WatchResources`. @defaultValue `RESOURCE_PUBLISHER_VERSION`
   */
  version?: string;
}

/**
 * Opens a plugin's inventory stream. The gRPC implementation is {@link createGrpcConnector};
 * tests pass a scripted one. Handlers are never called synchronously from `connect`.
 */
export type PublisherConnector = (
  request: WatchRequest,
  handlers: InventoryStreamHandlers,
) => InventoryStream;
