import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DriverServer } from '@slicekeeper/driver-kit';
import { errorMessage } from '@slicekeeper/errors';
import { createLogger, installShutdown } from '@slicekeeper/observability';
import { traceExportSettings } from '@slicekeeper/config';
import { parseEndpoint } from '@slicekeeper/proto';
import { startTracing } from '@slicekeeper/telemetry';
import { loadConfig } from './config';
import { loadInventoryFile, watchInventoryFile } from './inventory-file';
import { profileInventoryFile } from './profiles';
import { publishInventory } from './publish-inventory';
import { RegistrationClient } from '@slicekeeper/registration-client';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'example-driver', level: config.LOG_LEVEL });
  const inventoryFile = config.INVENTORY_FILE ?? profileInventoryFile(config.PROFILE);
  const exportTo = traceExportSettings(config, 'example-driver');
  const traced = exportTo === undefined ? undefined : startTracing(exportTo);

  const listen = parseEndpoint(config.ENDPOINT);
  if (typeof listen !== 'string' && listen.kind === 'unix') {
    await mkdir(dirname(listen.path), { recursive: true });
  }
  const server = new DriverServer({
    driverName: config.DRIVER_NAME,
    endpoint: config.ENDPOINT,
    logger,
    reportOnce: config.FAULT === 'end-stream',
  });
  if (config.FAULT === 'unimplemented') server.setFault('unimplemented');
  const publishing = {
    server,
    tracing: traced?.tracing,
    node: config.NODE_NAME,
    driver: config.DRIVER_NAME,
  };
  // Before serving: the first stream gets the first inventory, with its span's traceparent.
  await publishInventory(publishing, () => loadInventoryFile(inventoryFile));

  const reload = async (why: string): Promise<void> => {
    try {
      await publishInventory(publishing, () => loadInventoryFile(inventoryFile));
      logger.info({ why, file: inventoryFile, streams: server.openStreams }, 'inventory published');
    } catch (error) {
      logger.error(
        { err: errorMessage(error) },
        'inventory not reloaded, keeping the previous one',
      );
    }
  };
  const stopWatching = watchInventoryFile(inventoryFile, () => void reload('file changed'));
  process.on('SIGHUP', () => void reload('SIGHUP'));
  // Fault switches for tests: SIGUSR1 ends every stream (EOF), SIGUSR2 exits abruptly.
  process.on('SIGUSR1', () => {
    server.endStreams();
  });
  process.on('SIGUSR2', () => {
    process.kill(process.pid, 'SIGKILL');
  });

  const endpoint = await server.start();
  const plugin = {
    node: config.NODE_NAME,
    driver: config.DRIVER_NAME,
    endpoint: config.ADVERTISE_ENDPOINT ?? endpoint,
  };
  const registration =
    config.REGISTRATION_API_URL === undefined
      ? undefined
      : new RegistrationClient({
          baseUrl: config.REGISTRATION_API_URL,
          ...(config.REGISTRATION_TOKEN_FILE === undefined
            ? {}
            : { token: (await readFile(config.REGISTRATION_TOKEN_FILE, 'utf8')).trim() }),
          ...(config.REGISTRATION_API_CA_FILE === undefined
            ? {}
            : { caFile: config.REGISTRATION_API_CA_FILE }),
        });

  installShutdown({
    logger,
    close: async () => {
      stopWatching();
      if (registration !== undefined) {
        try {
          await registration.deregister(plugin);
        } catch (error) {
          logger.warn({ err: errorMessage(error) }, 'deregistration failed');
        }
      }
      await server.close();
      await traced?.shutdown();
    },
  });

  if (registration !== undefined) {
    // Like a kubelet plugin, keep trying while the API is not up yet; give up on a refusal.
    await registration.registerRetrying(plugin, config.REGISTRATION_TIMEOUT);
    logger.info(plugin, 'registered');
  }
  if (config.FAULT === 'exit') {
    setTimeout(() => {
      logger.warn('exiting abruptly (FAULT=exit)');
      process.kill(process.pid, 'SIGKILL');
    }, config.FAULT_DELAY);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`example-driver: ${errorMessage(error)}\n`);
  process.exit(1);
});
