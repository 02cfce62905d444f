import { resolve } from 'node:path';
import { startKubeEmulator } from '@slicekeeper/apiserver';
import { createLogger, installShutdown } from '@slicekeeper/observability';
import { loadConfig } from './config';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger({ service: 'kube-emulator', level: config.LOG_LEVEL });
  const running = await startKubeEmulator({
    port: config.PORT,
    host: config.HOST,
    historySize: config.HISTORY_SIZE,
    garbageCollectionDelayMs: config.GC_DELAY,
    release: config.KUBE_RELEASE,
    featureGates: config.FEATURE_GATES,
    kubeconfigPath: resolve(config.KUBECONFIG_OUT),
    serviceAccountIssuer: config.SERVICE_ACCOUNT_ISSUER,
    ...(config.SERVICE_ACCOUNT_SIGNING_KEY_FILE === undefined
      ? {}
      : { serviceAccountSigningKeyFile: resolve(config.SERVICE_ACCOUNT_SIGNING_KEY_FILE) }),
    ...(config.TOKEN_FILE === undefined ? {} : { tokenFile: config.TOKEN_FILE }),
    ...(config.DATA_FILE === undefined ? {} : { dataFile: resolve(config.DATA_FILE) }),
    logger,
  });
  logger.info(
    {
      url: running.url,
      kubeconfig: running.kubeconfigPath,
      release: config.KUBE_RELEASE,
      featureGates: config.FEATURE_GATES,
    },
    'listening',
  );
  installShutdown({ logger, close: () => running.close() });
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
