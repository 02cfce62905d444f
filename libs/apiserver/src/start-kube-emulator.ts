import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KubeEmulator } from './kube-emulator';
import type { KubeEmulatorOptions } from './kube-emulator';
import { buildKubeconfig } from './kubeconfig';

export interface StartKubeEmulatorOptions extends KubeEmulatorOptions {
  /** Also write the kubeconfig to this file (mode 0600), for kubectl and other processes. */
  kubeconfigPath?: string;
}

export interface RunningKubeEmulator {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Kubeconfig YAML pointing at `url`, with the admin token when a token file is used. */
  kubeconfig: string;
  /** Where the kubeconfig was written, when `kubeconfigPath` was given. */
  kubeconfigPath?: string;
  /** Test hooks: counters, faults, latency, reset, forgetHistory, request log. */
  emulator: KubeEmulator;
  /** Stops the server; idempotent. */
  close(): Promise<void>;
}

/**
 * Starts a kube emulator: in-process for tests (`startKubeEmulator({ port: 0 })`) or as the
 * standalone app does. Resolves once it listens.
 */
export async function startKubeEmulator(
  options: StartKubeEmulatorOptions = {},
): Promise<RunningKubeEmulator> {
  const emulator = new KubeEmulator(options);
  const url = await emulator.start();
  const token = emulator.adminToken();
  const kubeconfig = buildKubeconfig({ server: url, ...(token === undefined ? {} : { token }) });
  try {
    if (options.kubeconfigPath !== undefined) {
      await mkdir(dirname(options.kubeconfigPath), { recursive: true });
      await writeFile(options.kubeconfigPath, kubeconfig, { mode: 0o600 });
    }
  } catch (error) {
    await emulator.close();
    throw error;
  }
  return {
    url,
    kubeconfig,
    ...(options.kubeconfigPath === undefined ? {} : { kubeconfigPath: options.kubeconfigPath }),
    emulator,
    close: () => emulator.close(),
  };
}
