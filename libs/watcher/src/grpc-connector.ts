import { credentials } from '@grpc/grpc-js';
import type { ServiceError } from '@grpc/grpc-js';
import { TerminalError } from '@slicekeeper/errors';
import {
  classifyGrpcError,
  grpcTarget,
  parseEndpoint,
  publisher,
  toDriverInventory,
} from '@slicekeeper/proto';
import type { PublisherConnector } from './publisher-connector';

export interface GrpcConnectorOptions {
  /** Largest inventory message accepted, bytes. @defaultValue 16 MiB */
  maxMessageBytes?: number;
}

/**
 * Opens `ResourcePublisher.WatchResources` with @grpc/grpc-js: one client (channel) per stream,
 * closed with it. A plugin endpoint serves one plugin, so nothing is gained by sharing channels,
 * and a private channel means a cancelled stream leaves no connection behind.
 */
export function createGrpcConnector(options: GrpcConnectorOptions = {}): PublisherConnector {
  const maxMessageBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
  return ({ endpoint, nodeName }, handlers) => {
    let done = false;
    const finish = (): boolean => {
      if (done) return false;
      done = true;
      return true;
    };
    const parsed = parseEndpoint(endpoint);
    if (typeof parsed === 'string') {
      setImmediate(() => {
        if (finish()) {
          handlers.error(
            new TerminalError(`endpoint "${endpoint}": ${parsed}`, { code: 'invalid-endpoint' }),
          );
        }
      });
      return { cancel: () => void finish() };
    }
    const client = new publisher.ResourcePublisherClient(
      grpcTarget(parsed),
      credentials.createInsecure(),
      {
        'grpc.max_receive_message_length': maxMessageBytes,
        // Every stream gets its own connection, as every plugin has its own endpoint.
        'grpc.use_local_subchannel_pool': 1,
      },
    );
    const call = client.watchResources({ nodeName });
    call.on('data', (message: publisher.DriverResources) => {
      if (!done) handlers.message(toDriverInventory(message, { nodeName }));
    });
    call.on('error', (error: ServiceError) => {
      if (finish()) {
        client.close();
        handlers.error(classifyGrpcError(error, `WatchResources ${endpoint}`));
      }
    });
    call.on('end', () => {
      if (finish()) {
        client.close();
        handlers.end();
      }
    });
    return {
      cancel: () => {
        if (!finish()) return;
        call.cancel();
        client.close();
      },
    };
  };
}
