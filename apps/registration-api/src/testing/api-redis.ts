import type { RedisClient } from '@slicekeeper/queue';
import type { Logger } from '@slicekeeper/observability';
import type { SyncQueue } from '@slicekeeper/queue';
import { RedisConnections } from '@slicekeeper/queue';
import { openApiConnection } from '../api-redis';
import type { ApiConnection } from '../api-redis';

export interface ApiRedisOptions {
  /** `redis://[:password@]host:port[/db]` or `rediss://…`. */
  url: string;
  /** slicekeeper's Redis prefix. */
  prefix: string;
  /** Where the outage lines go. */
  logger: Logger;
}

/**
 * {@link openApiConnection} outside `runService`, for tests: the connection main.ts makes, with
 * connections of its own to close.
 */
export class ApiRedis implements ApiConnection {
  readonly connection: RedisClient;
  readonly syncQueue: SyncQueue;
  private readonly connections: RedisConnections;
  private closing: Promise<void> | undefined;

  constructor(options: ApiRedisOptions) {
    this.connections = new RedisConnections({
      target: { kind: 'server', url: options.url },
      logger: options.logger,
    });
    ({ connection: this.connection, syncQueue: this.syncQueue } = openApiConnection(
      this.connections,
      options.prefix,
    ));
  }

  /** Closes the queue, then the connection (at once when Redis is down). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.syncQueue.close();
      await this.connections.close();
    })();
    return this.closing;
  }
}
