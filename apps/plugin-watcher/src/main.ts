import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { EndpointPolicy, GrpcPluginProber } from '@slicekeeper/admission';
import { SyncQueue } from '@slicekeeper/queue';
import { runService } from '@slicekeeper/runtime';
import { RegistrationClient } from '@slicekeeper/registration-client';
import {
  PluginDiscovery,
  PluginWatcher,
  createGrpcConnector,
  socketDirectory,
} from '@slicekeeper/watcher';
import { loadConfig } from './config';

void runService({
  service: 'plugin-watcher',
  loadConfig: () => loadConfig(process.env),
  build: ({ config, logger, registry, redis: connections, tracing }) => {
    const replicaId = config.REPLICA_ID ?? `${hostname()}-${randomBytes(3).toString('hex')}`;
    const redis = connections.open('plugin-watcher');
    // Subscriber mode: the sync outcomes passed on to the drivers (NotifyPublishStatus).
    const feedbackSubscriber = connections.open('plugin-watcher-feedback');
    const queue = new SyncQueue({ connection: redis, prefix: config.REDIS_PREFIX });
    connections.addErrorSources(redis, queue.queue);
    // Checked before every dial: a registration that passed the API once is not trusted forever.
    const policy = new EndpointPolicy({
      socketDirectories: config.PLUGIN_SOCKET_DIRS,
      tcpHosts: config.PLUGIN_TCP_ALLOWLIST,
      allowLoopback: config.PLUGIN_ALLOW_LOOPBACK,
      allowLinkLocal: config.PLUGIN_ALLOW_LINK_LOCAL,
    });
    const watcher = new PluginWatcher({
      connector: createGrpcConnector({ policy }),
      redis,
      queue,
      prefix: config.REDIS_PREFIX,
      ...(config.WATCHER_MODE === 'node'
        ? { nodeName: config.NODE_NAME ?? '' }
        : { shared: { replicaId, leaseMs: config.LEASE_DURATION } }),
      wipeDelayMs: config.WIPE_DELAY,
      backoff: { initialMs: config.RECONNECT_INITIAL_DELAY, maxMs: config.RECONNECT_MAX_DELAY },
      logger,
      metrics: registry,
      feedbackSubscriber,
      ...(tracing === undefined ? {} : { tracing }),
    });
    // Node mode with a registration API: kubelet-style discovery of the node's plugin sockets.
    const discovery =
      config.WATCHER_MODE === 'node' && config.REGISTRATION_API_URL !== undefined
        ? new PluginDiscovery({
            directory: socketDirectory(config.PLUGIN_REGISTRATION_DIR),
            nodeName: config.NODE_NAME ?? '',
            policy,
            prober: new GrpcPluginProber(),
            registrar: new RegistrationClient({
              baseUrl: config.REGISTRATION_API_URL,
              ...(config.REGISTRATION_TOKEN_FILE === undefined
                ? {}
                : { tokenFile: config.REGISTRATION_TOKEN_FILE }),
              ...(config.REGISTRATION_API_CA_FILE === undefined
                ? {}
                : { caFile: config.REGISTRATION_API_CA_FILE }),
            }),
            rescanMs: config.DISCOVERY_RESCAN_INTERVAL,
            logger: logger.child({ component: 'discovery' }),
          })
        : undefined;
    return {
      probes: {
        port: config.PROBE_PORT,
        host: config.PROBE_HOST,
        readiness: { redis: async () => void (await redis.ping()) },
      },
      start: async () => {
        await watcher.start();
        await discovery?.start();
        logger.info(
          {
            mode: config.WATCHER_MODE,
            node: config.NODE_NAME,
            replicaId,
            keys: watcher.keys.length,
            ...(discovery === undefined ? {} : { registrationDir: config.PLUGIN_REGISTRATION_DIR }),
          },
          'watching',
        );
      },
      // Discovery first: no registration starts while the streams close.
      close: [...(discovery === undefined ? [] : [discovery]), watcher, queue],
    };
  },
});
