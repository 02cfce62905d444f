import type { DriverInventory } from '@slicekeeper/contracts';
import type { DriverServer } from '@slicekeeper/driver-kit';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_SLICEKEEPER_DRIVER,
  ATTR_SLICEKEEPER_NODE,
  SpanKind,
} from '@slicekeeper/telemetry';
import type { Tracing } from '@slicekeeper/telemetry';

export interface PublishInventoryOptions {
  server: DriverServer;
  /** Absent when tracing is off: no span, and the inventory carries no traceparent. */
  tracing?: Tracing | undefined;
  node: string;
  driver: string;
}

/**
 * Reads an inventory and publishes it, inside a `publish inventory` span (kind producer) when
 * tracing is on: driver-kit sends that span's traceparent with the inventory, so slicekeeper's
 * trace of the change starts here. A read that fails marks the span failed and is rethrown;
 * nothing is published then.
 */
export async function publishInventory(
  options: PublishInventoryOptions,
  read: () => Promise<DriverInventory>,
): Promise<void> {
  const { server, tracing } = options;
  const publish = async (): Promise<void> => {
    server.publish(await read());
  };
  if (tracing === undefined) {
    await publish();
    return;
  }
  await tracing.inSpan(
    'publish inventory',
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
        [ATTR_MESSAGING_DESTINATION_NAME]: 'inventory',
        [ATTR_SLICEKEEPER_NODE]: options.node,
        [ATTR_SLICEKEEPER_DRIVER]: options.driver,
      },
    },
    publish,
  );
}
