/**
 * Span attribute names. OpenTelemetry's semantic conventions where one fits (the stable ones
 * from `@opentelemetry/semantic-conventions`; the messaging ones are still incubating there, so
 * their names are spelled here as the conventions give them), and slicekeeper's own under
 * `slicekeeper.`.
 */
export {
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_RPC_METHOD,
  ATTR_RPC_SYSTEM_NAME,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';

export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_MESSAGING_MESSAGE_ID = 'messaging.message.id';
export const ATTR_MESSAGING_BATCH_MESSAGE_COUNT = 'messaging.batch.message_count';

/** The key's node ('' for a cluster-scoped key). */
export const ATTR_SLICEKEEPER_NODE = 'slicekeeper.node';
export const ATTR_SLICEKEEPER_DRIVER = 'slicekeeper.driver';
export const ATTR_SLICEKEEPER_SNAPSHOT_GENERATION = 'slicekeeper.snapshot_generation';
/** What a step came to: a store's result, a sync's outcome. */
export const ATTR_SLICEKEEPER_OUTCOME = 'slicekeeper.outcome';
