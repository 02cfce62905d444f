import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildKubeconfig, startKubeEmulator } from '@slicekeeper/apiserver';
import type { KubeRelease, RunningKubeEmulator } from '@slicekeeper/apiserver';
import type { ResourceSlice } from '@slicekeeper/slices';
import { requestJson } from '@slicekeeper/testing';
import { ClusterCache } from './cluster-cache';
import { KubeSliceClient } from './kube-slice-client';
import { KubeTransport } from './kube-transport';
import { discoverResourceApi } from './resource-api';

const node = 'node-a';
const slice: ResourceSlice = {
  apiVersion: 'resource.k8s.io/v1',
  kind: 'ResourceSlice',
  metadata: {
    generateName: '00000-gpu.example.com-node-a-',
    labels: { 'app.kubernetes.io/managed-by': 'slicekeeper' },
  },
  spec: {
    driver: 'gpu.example.com',
    nodeName: node,
    pool: { name: node, generation: 1, resourceSliceCount: 1 },
    devices: [
      {
        name: 'gpu-0',
        attributes: { model: { string: 'H100' }, index: { int: 0 } },
        capacity: { memory: { value: '80Gi' } },
      },
    ],
  },
};

describe('resource.k8s.io discovery and versions, against the emulator as each release', () => {
  const running: RunningKubeEmulator[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.close()));
  });

  async function emulator(release: KubeRelease): Promise<KubeTransport> {
    const started = await startKubeEmulator({ port: 0, release });
    running.push(started);
    return new KubeTransport({ kind: 'yaml', text: started.kubeconfig });
  }

  it.each([
    ['1.32', 'v1beta1'],
    ['1.33', 'v1beta2'],
    ['1.36', 'v1'],
  ] as const)(
    'as %s: picks %s and writes and reads in it, as v1 to the planner',
    async (release, version) => {
      const transport = await emulator(release);
      const api = await discoverResourceApi({ transport });
      expect(api.version).toBe(version);
      expect(api.release).toMatchObject({ major: 1, minor: Number(release.slice(2)) });

      const client = new KubeSliceClient({ transport, apiVersion: api.version });
      const created = await client.createSlice(slice);
      expect(created.spec.devices).toEqual(slice.spec.devices);
      const cache = new ClusterCache({
        transport,
        apiVersion: api.version,
        logger: { debug: () => undefined, info: () => undefined, warn: () => undefined },
      });
      await cache.start();
      expect(
        cache.slicesOf({ node, driver: 'gpu.example.com' }).map((s) => s.spec.devices),
      ).toEqual([slice.spec.devices]);
      // What the server stores is what any client of any version reads.
      const url = running[0]?.url ?? '';
      const asV1beta1 = (await requestJson(
        url,
        'GET',
        `/apis/resource.k8s.io/v1beta1/resourceslices/${created.metadata.name}`,
      )) as { spec: { devices: { basic: unknown }[] } };
      expect(asV1beta1.spec.devices[0]?.basic).toMatchObject({
        attributes: slice.spec.devices?.[0]?.attributes,
      });
      await cache.close();
      await client.close();
      transport.close();
    },
  );

  it('a server without a resource.k8s.io version slicekeeper speaks is a clear error', async () => {
    // A 1.31-like server: no resource.k8s.io group at all.
    const server = createServer((req, res) => {
      const body =
        req.url === '/version'
          ? { major: '1', minor: '31', gitVersion: 'v1.31.4' }
          : { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 };
      res.writeHead(req.url === '/version' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const transport = new KubeTransport({
      kind: 'yaml',
      text: buildKubeconfig({ server: `http://127.0.0.1:${port}` }),
    });
    await expect(discoverResourceApi({ transport })).rejects.toThrow(
      /Kubernetes v1\.31\.4\) serves no resource\.k8s\.io version slicekeeper publishes with \(v1, v1beta2, v1beta1; it serves none\): DRA needs Kubernetes 1\.32/,
    );
    transport.close();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  });
});
