import { hostname } from 'node:os';
import {
  ClusterCache,
  EventRecorder,
  KubeEventClient,
  KubeNodeStatusClient,
  KubeSliceClient,
  KubeTransport,
  awaitResourceApi,
  describeResourceApi,
  discoverResourceApi,
} from '@slicekeeper/kube';
import { SyncQueue } from '@slicekeeper/queue';
import { runService } from '@slicekeeper/runtime';
import {
  AntiEntropy,
  ClusterTriggers,
  KeyEventReporter,
  Maintenance,
  NodeConditionMetrics,
  NodeConditionQueue,
  NodeConditionReconciler,
  NodeConditionWorker,
  Reconciler,
  ResourceApiFollower,
  SyncWorker,
  SyncerMetrics,
} from '@slicekeeper/syncer';
import {
  DeletionMarks,
  NodePublishState,
  RegistrationStore,
  SyncRecords,
  WriteRateLimiter,
} from '@slicekeeper/state';
import { layoutRulesFor } from '@slicekeeper/slices';
import { healthTaintPolicy, kubeconfigSource, loadConfig } from './config';

/** Who the syncer's Events say reported them. */
const EVENT_REPORTING_CONTROLLER = 'slicekeeper.dev/slice-syncer';

void runService({
  service: 'slice-syncer',
  loadConfig: () => loadConfig(process.env),
  build: async ({ config, logger, registry, redis: connections, tracing }) => {
    const metrics = new SyncerMetrics(registry);
    const prefix = config.REDIS_PREFIX;
    const onRequest = (verb: string, resource: string, code: number | 'error') => {
      metrics.kubeRequests.inc({ verb, resource, code: String(code) });
      // A list, watch or create of slices answered 404: the collection itself is gone (the
      // server stopped serving the version in use); ask which versions it serves now.
      if (code === 404 && resource === 'resourceslices' && verb !== 'update' && verb !== 'delete') {
        void follower.check();
      }
    };

    // Two connections, and one blocking connection per BullMQ Worker (three), all counted in
    // slicekeeper_redis_connections: the queues, the workers and the stores share the first.
    const redis = connections.open('slice-syncer');
    // Syncs pipeline their Redis commands, and ioredis copies every script defined on a
    // connection into each pipeline it builds: with BullMQ's dozens of scripts on the queue's
    // connection, that copy was 8% of the syncer's busy CPU.
    const syncConnection = connections.open('slice-syncer-sync');
    // One Queue object per queue: the sync queue's serves the producers, the worker's rate
    // limit and the gauges.
    const syncQueue = new SyncQueue({ connection: redis, prefix });
    // The DRAResourcesPublished Node condition: asked for by every recorded sync status and by
    // the Node watch, evaluated one node at a time across replicas.
    const nodeConditionQueue = new NodeConditionQueue({ connection: redis, prefix, logger });
    connections.addErrorSources(redis, syncQueue.queue, nodeConditionQueue.queue);

    // One transport (connection pool, credentials) for the watches and the writes; with tracing
    // on, each write (slices, the node condition, Events) is a client span.
    const transport = new KubeTransport(
      kubeconfigSource(config),
      tracing === undefined ? {} : { tracing },
    );
    // Which resource.k8s.io version to write in: the newest the server serves.
    const resourceApi = await awaitResourceApi({ transport, onRequest, logger });
    const apiVersion = resourceApi.version;
    logger.info(
      { api: describeResourceApi(resourceApi), served: resourceApi.served },
      'resource API discovered',
    );
    const api = new KubeSliceClient({ transport, onRequest, apiVersion });
    // The slices a replica deletes, marked first: the other replicas' watches know them as ours.
    const deletions = new DeletionMarks({ redis: syncConnection, prefix });
    const triggers = new ClusterTriggers({
      syncQueue,
      registrations: new RegistrationStore({ redis, prefix }),
      deletions,
      logger,
    });
    const cluster = new ClusterCache({
      transport,
      apiVersion,
      logger: logger.child({ component: 'cluster-cache' }),
      onForeignChange: triggers.onForeignChange,
      onNode: (change) => {
        triggers.onNode(change);
        nodeConditionQueue.onNode(change);
      },
      onNodeCondition: nodeConditionQueue.onNodeCondition,
      onRequest,
    });
    const antiEntropy = new AntiEntropy({
      cache: cluster,
      intervalMs: config.RELIST_INTERVAL,
      logger,
      metrics,
    });
    const writeLimiter = new WriteRateLimiter({
      redis: syncConnection,
      prefix,
      ratePerSecond: config.SYNC_WRITE_RATE,
      burst: config.SYNC_WRITE_BURST,
      onAcquired: (waitedMs) => {
        metrics.writeLimitWait.observe(waitedMs / 1000);
      },
    });
    metrics.writeLimit.set(config.SYNC_WRITE_RATE);
    // Events about Nodes for what a user must notice (kubectl describe node), in series.
    const events = new EventRecorder({
      sink: new KubeEventClient({ transport, onRequest }),
      reportingController: EVENT_REPORTING_CONTROLLER,
      // The pod's name in Kubernetes.
      reportingInstance: hostname(),
      logger: logger.child({ component: 'events' }),
      onRecord: (occurrence, outcome) => {
        metrics.events.inc({ reason: occurrence.reason, outcome });
      },
    });
    const reconciler = new Reconciler({
      records: new SyncRecords({ redis: syncConnection, prefix, writeLimiter }),
      cluster,
      api,
      writeLimiter,
      deletions,
      metrics,
      logger,
      publishedWith: () => follower.describe(),
      layoutRules: () => layoutRulesFor(follower.current.release),
      healthTaints: (driver) => healthTaintPolicy(config, driver),
      events: new KeyEventReporter({
        recorder: events,
        nodeUid: (node) => cluster.nodeUid(node),
        sliceOf: (key) => cluster.slicesOf(key)[0]?.metadata,
      }),
      ...(tracing === undefined ? {} : { tracing }),
    });
    const maintenance = new Maintenance({
      redis,
      prefix,
      cluster,
      syncQueue,
      logger,
      resyncIntervalMs: config.RESYNC_INTERVAL,
      orphanGraceMs: config.ORPHAN_GRACE,
      metrics,
    });
    // Follows the API server through upgrades: a newly served version is used without a restart.
    const follower = new ResourceApiFollower({
      initial: resourceApi,
      discover: () => discoverResourceApi({ transport, onRequest }),
      speakers: [api, cluster],
      onChange: async () => {
        await maintenance.resync();
      },
      intervalMs: config.DISCOVERY_INTERVAL,
      metrics,
      logger,
    });
    const nodeConditions = new NodeConditionWorker({
      connection: redis,
      prefix,
      reconciler: new NodeConditionReconciler({
        records: new NodePublishState({ redis: syncConnection, prefix }),
        cluster,
        api: new KubeNodeStatusClient({ transport, onRequest }),
        metrics: new NodeConditionMetrics(registry),
        logger,
      }),
      logger,
    });
    const syncer = new SyncWorker({
      connection: redis,
      queue: syncQueue.queue,
      prefix,
      reconciler,
      logger,
      concurrency: config.SYNC_CONCURRENCY,
      lockDurationMs: config.SYNC_LOCK_DURATION,
      stalledIntervalMs: config.SYNC_STALLED_INTERVAL,
      registry,
      onStatus: nodeConditionQueue.onStatus,
      maintenance: {
        connection: redis,
        jobs: maintenance,
        janitorIntervalMs: config.JANITOR_INTERVAL,
      },
    });
    // Every BullMQ object's errors go to the outage log: one line per outage, none on stderr.
    connections.addErrorSources(redis, ...syncer.errorSources, ...nodeConditions.errorSources);

    return {
      probes: {
        host: config.PROBE_HOST,
        port: config.PROBE_PORT,
        readiness: {
          redis: async () => {
            await redis.ping();
          },
          'kube-apiserver': async () => {
            await api.ping();
            return follower.describe();
          },
          // Syncs plan from the cache: none runs before its first list is in.
          'cluster-cache': () =>
            cluster.synced ? Promise.resolve() : Promise.reject(new Error('first list not in yet')),
        },
      },
      start: async ({ probeUrl }) => {
        await cluster.start();
        antiEntropy.start();
        events.start();
        follower.start();
        await nodeConditions.start();
        await syncer.start();
        logger.info({ probes: probeUrl, concurrency: config.SYNC_CONCURRENCY }, 'started');
      },
      close: [
        syncer,
        nodeConditions,
        antiEntropy,
        follower,
        syncQueue,
        nodeConditionQueue,
        events,
        cluster,
        api,
        {
          close: () => {
            transport.close();
            return Promise.resolve();
          },
        },
      ],
    };
  },
});
