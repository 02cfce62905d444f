import { resolve } from 'node:path';
import { errorMessage } from '@slicekeeper/errors';
import { LocalStack, stackSummary } from '@slicekeeper/local-stack';
import { loadConfig } from './config';

/** `npm start`: the whole system on loopback until Ctrl-C. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const stack = new LocalStack({
    stateDir: resolve(config.STATE_DIR),
    ...(config.REDIS_URL === undefined ? {} : { redisUrl: config.REDIS_URL }),
    redisPrefix: config.REDIS_PREFIX,
    ...(config.KUBECONFIG === undefined ? {} : { kubeconfig: resolve(config.KUBECONFIG) }),
    nodes: config.NODES,
    driverName: config.DRIVER_NAME,
    profile: config.PROFILE,
    ...(config.KUBE_RELEASE === undefined ? {} : { kubeRelease: config.KUBE_RELEASE }),
    ...(config.FEATURE_GATES === undefined ? {} : { featureGates: config.FEATURE_GATES }),
    syncerReplicas: config.SYNCER_REPLICAS,
    apiPort: config.API_PORT,
    emulatorPort: config.EMULATOR_PORT,
    logLevel: config.LOG_LEVEL,
    startTimeoutMs: config.START_TIMEOUT,
    stopGraceMs: config.STOP_TIMEOUT,
    env: process.env,
    write: (line) => process.stdout.write(`${line}\n`),
    color: process.stdout.isTTY && config.NO_COLOR === undefined,
  });

  let stopping = false;
  const stop = async (code: number, why: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    stack.say(`stopping (${why})`);
    await stack.close();
    stack.say('stopped');
    process.exit(code);
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        stack.say(`${signal} again: killing everything now`);
        process.exit(1); // The 'exit' handler of the stack SIGKILLs what still runs.
      }
      void stop(0, signal);
    });
  }

  let info;
  try {
    info = await stack.start();
  } catch (error) {
    stack.say(`failed to start: ${errorMessage(error)}`);
    await stop(1, 'start failed');
    return;
  }
  for (const line of stackSummary(info, process.cwd())) stack.say(line);
  // The stack runs until Ctrl-C, restarting a child that dies; this keeps the process up while
  // every child is down and waiting for its restart.
  setInterval(() => undefined, 2 ** 30);
}

main().catch((error: unknown) => {
  process.stderr.write(`local-stack: ${errorMessage(error)}\n`);
  process.exit(1);
});
