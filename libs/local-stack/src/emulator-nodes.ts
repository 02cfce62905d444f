import { httpError, httpJson } from './http-json';

/**
 * Creates Node objects in the kube emulator (an existing one is kept), so that the syncer finds
 * the nodes the example drivers run on — the emulator starts empty. This talks plain HTTP to the
 * emulator only, which has no TLS and no authentication when it runs without a token file; a
 * real cluster's Nodes are never created.
 */
export async function createEmulatorNodes(
  emulatorUrl: string,
  nodes: readonly string[],
): Promise<void> {
  const url = new URL('/api/v1/nodes', emulatorUrl).toString();
  await Promise.all(
    nodes.map(async (name) => {
      const result = await httpJson('POST', url, {
        body: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name, labels: { 'kubernetes.io/hostname': name } },
        },
      });
      if (result.status !== 201 && result.status !== 409) throw httpError('POST', url, result);
    }),
  );
}
