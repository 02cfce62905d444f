import { Metadata, credentials, status as grpcStatus } from '@grpc/grpc-js';
import type { ChannelOptions, Client, ClientReadableStream, ServiceError } from '@grpc/grpc-js';
import { KUBELET_130_PLUGIN_VERSION } from '@slicekeeper/contracts';
import { TerminalError, isTerminal, withContext } from '@slicekeeper/errors';
import type { SlicekeeperError } from '@slicekeeper/errors';
import {
  classifyGrpcError,
  grpcTarget,
  kubeletDra,
  mapDriverResources,
  mapNodeResources,
  parseEndpoint,
  publishStatusRequest,
  publisher,
  rejectedMessageProblem,
} from '@slicekeeper/proto';
import type { InventoryMapping } from '@slicekeeper/proto';
import type { NotifyResult, PublisherConnector } from './publisher-connector';

/**
 * The endpoint policy as the connector uses it: `EndpointPolicy` of @slicekeeper/admission,
 * which the registration API checks registrations with.
 */
export interface DialPolicy {
  /**
   * Checks a registered endpoint as it is now (resolving its name, following its symlinks) and
   * returns the gRPC target to dial; rejects with a terminal error when the policy refuses it.
   */
  admit(endpoint: string): Promise<{ readonly target: string }>;
}

export interface GrpcConnectorOptions {
  /**
   * Largest inventory message accepted, bytes. A larger one is reported as `rejected` (the
   * plugin's bug), and gRPC ends the call. @defaultValue 16 MiB
   */
  maxMessageBytes?: number;
  /**
   * Checked before every dial, reconnects included, on what is dialled: a name is resolved
   * again and its checked address dialled, a socket path is followed to its real path, so a
   * registration that passed once cannot be re-pointed (DNS rebinding, a swapped symlink).
   * Without it endpoints are dialled as registered, unchecked: for tests only.
   */
  policy?: DialPolicy;
  /** How long a `NotifyPublishStatus` call may take, ms. @defaultValue 5000 */
  notifyTimeoutMs?: number;
}

/**
 * Opens `ResourcePublisher.WatchResources` with @grpc/grpc-js, or kubelet 1.30's
 * `v1alpha3.Node/NodeListAndWatchResources` for a plugin registered with
 * `KUBELET_130_PLUGIN_VERSION` (its named resources mapped by `mapNodeResources`; it has no
 * feedback RPC, so `notify` answers `unimplemented` without a call). One client (channel) per
 * stream, closed with it. A plugin endpoint serves one plugin, so nothing is gained by sharing
 * channels, and a private channel means a cancelled stream leaves no connection behind.
 */
export function createGrpcConnector(options: GrpcConnectorOptions = {}): PublisherConnector {
  const maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
  const { policy } = options;
  const notifyTimeoutMs = options.notifyTimeoutMs ?? 5000;
  return ({ endpoint, nodeName, version }, handlers) => {
    const kubelet130 = version === KUBELET_130_PLUGIN_VERSION;
    let done = false;
    let cancelOpen: (() => void) | undefined;
    let channel: publisher.ResourcePublisherClient | undefined;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      return true;
    };
    const fail = (error: SlicekeeperError): void => {
      if (finish()) handlers.error(error);
    };

    /** Reports what `call` brings; `map` turns one of its messages into an inventory. */
    const follow = <M>(
      client: Client,
      call: ClientReadableStream<M>,
      rpc: string,
      map: (message: M) => InventoryMapping,
    ): void => {
      call.on('data', (message: M) => {
        if (done) return;
        const mapping = map(message);
        if (mapping.kind === 'inventory') handlers.message(mapping.inventory);
        else handlers.rejected({ problem: mapping.problem, callEnded: false });
      });
      call.on('error', (error: ServiceError) => {
        if (!finish()) return;
        client.close();
        // A message grpc-js refused (too large, undecodable) ends the call, but the plugin did
        // answer: that is its bug, not an outage.
        const problem = rejectedMessageProblem(error);
        if (problem === undefined) {
          handlers.error(classifyGrpcError(error, `${rpc} ${endpoint}`));
        } else {
          handlers.rejected({ problem, callEnded: true });
        }
      });
      call.on('end', () => {
        if (finish()) {
          client.close();
          handlers.end();
        }
      });
      cancelOpen = () => {
        call.cancel();
        client.close();
      };
    };

    const open = (target: string): void => {
      const channelOptions: ChannelOptions = {
        'grpc.max_receive_message_length': maxMessageBytes,
        // Every stream gets its own connection, as every plugin has its own endpoint.
        'grpc.use_local_subchannel_pool': 1,
        // The target is a checked address or socket: nothing to look up in DNS.
        'grpc.service_config_disable_resolution': 1,
      };
      if (kubelet130) {
        const client = new kubeletDra.NodeClient(
          target,
          credentials.createInsecure(),
          channelOptions,
        );
        follow(client, client.nodeListAndWatchResources({}), 'NodeListAndWatchResources', (m) =>
          mapNodeResources(m, { nodeName }),
        );
        return;
      }
      const client = new publisher.ResourcePublisherClient(
        target,
        credentials.createInsecure(),
        channelOptions,
      );
      channel = client;
      follow(client, client.watchResources({ nodeName }), 'WatchResources', (m) =>
        mapDriverResources(m, { nodeName }),
      );
    };

    if (policy !== undefined) {
      policy.admit(endpoint).then(
        ({ target }) => {
          if (!done) open(target);
        },
        (error: unknown) => {
          fail(dialRefused(error));
        },
      );
    } else {
      const parsed = parseEndpoint(endpoint);
      if (typeof parsed !== 'string') {
        open(grpcTarget(parsed));
      } else {
        setImmediate(() => {
          fail(
            new TerminalError(`endpoint "${endpoint}": ${parsed}`, { code: 'invalid-endpoint' }),
          );
        });
      }
    }
    return {
      cancel: () => {
        if (finish()) cancelOpen?.();
      },
      // The optional feedback RPC goes over the stream's own channel, while the stream is open.
      notify: (node, status) =>
        new Promise<NotifyResult>((resolve) => {
          if (kubelet130) {
            resolve('unimplemented');
            return;
          }
          if (channel === undefined || done) {
            resolve('failed');
            return;
          }
          channel.notifyPublishStatus(
            publishStatusRequest(node, status),
            new Metadata(),
            { deadline: Date.now() + notifyTimeoutMs },
            (error) => {
              if (error === null) resolve('delivered');
              else resolve(error.code === grpcStatus.UNIMPLEMENTED ? 'unimplemented' : 'failed');
            },
          );
        }),
    };
  };
}

/**
 * A dial the policy would not allow. A refusal (terminal: forbidden or malformed) says so
 * plainly, as it will not pass on a retry; the stream still backs off, as the registration
 * may be replaced. A failure to check (a name that does not resolve now) is transient.
 */
function dialRefused(error: unknown): SlicekeeperError {
  return isTerminal(error)
    ? withContext('endpoint policy refused the dial', error)
    : withContext('dial', error);
}
