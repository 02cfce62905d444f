import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { EndpointPolicy, GrpcPluginProber } from '@slicekeeper/admission';
import { registration } from '@slicekeeper/proto';
import { RedisServer, uniquePrefix } from '@slicekeeper/testing';
import { ApiHarness, admin, nodeA } from './testing/api-harness';

type Behaviour = registration.PluginInfo | 'hang';

/** An in-process driver plugin serving the kubelet registration API on a unix socket. */
class FakeDriver {
  readonly told: registration.RegistrationStatus[] = [];
  private readonly server = new Server();

  constructor(
    readonly endpoint: string,
    behaviour: Behaviour | 'no-registration-service',
  ) {
    if (behaviour === 'no-registration-service') return;
    this.server.addService(registration.RegistrationService, {
      getInfo: (
        _call: ServerUnaryCall<registration.InfoRequest, registration.PluginInfo>,
        callback: sendUnaryData<registration.PluginInfo>,
      ) => {
        if (behaviour !== 'hang') callback(null, behaviour);
      },
      notifyRegistrationStatus: (
        call: ServerUnaryCall<
          registration.RegistrationStatus,
          registration.RegistrationStatusResponse
        >,
        callback: sendUnaryData<registration.RegistrationStatusResponse>,
      ) => {
        this.told.push(call.request);
        callback(null, {});
      },
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.bindAsync(this.endpoint, ServerCredentials.createInsecure(), (error) => {
        if (error === null) resolve();
        else reject(error);
      });
    });
    return this;
  }

  stop(): void {
    this.server.forceShutdown();
  }
}

const gpu: registration.PluginInfo = {
  type: 'DRAPlugin',
  name: 'gpu.example.com',
  endpoint: '',
  supportedVersions: ['v1.ResourcePublisher'],
};

describe('registration against a real plugin over gRPC', () => {
  let server: RedisServer;
  let dir: string;
  let h: ApiHarness;
  const drivers: FakeDriver[] = [];

  beforeAll(async () => {
    server = await RedisServer.start();
    dir = await mkdtemp(join(tmpdir(), 'sk-plugins-'));
    h = await new ApiHarness({
      redisUrl: server.url,
      prefix: uniquePrefix('api'),
      prober: new GrpcPluginProber({ dialTimeoutMs: 500, callTimeoutMs: 300 }),
      endpointPolicy: new EndpointPolicy({ socketDirectories: [dir] }),
    }).ready();
  });
  afterAll(async () => {
    for (const driver of drivers) driver.stop();
    await h.close();
    await rm(dir, { recursive: true, force: true });
    await server.stop();
  });

  async function driver(name: string, behaviour: Behaviour | 'no-registration-service') {
    const started = await new FakeDriver(`unix://${dir}/${name}.sock`, behaviour).start();
    drivers.push(started);
    return started;
  }

  const register = (body: Record<string, unknown>) =>
    h.app.inject({ method: 'POST', url: '/v1/plugins', headers: admin, payload: body });

  it('registers a plugin and tells it so', async () => {
    const plugin = await driver('gpu', gpu);
    const res = await register({ node: 'node-a', endpoint: plugin.endpoint });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      node: 'node-a',
      driver: 'gpu.example.com',
      endpoint: plugin.endpoint,
      version: 'v1.ResourcePublisher',
    });
    expect(plugin.told).toEqual([{ pluginRegistered: true, error: '' }]);
    expect(await h.store.get({ node: 'node-a', driver: 'gpu.example.com' })).toHaveLength(1);
  });

  it('registers a cluster-scoped plugin (empty node) for an admin, and names its key _cluster in paths', async () => {
    const plugin = await driver('fabric', { ...gpu, name: 'fabric.example.com' });
    const refused = await h.app.inject({
      method: 'POST',
      url: '/v1/plugins',
      headers: nodeA,
      payload: { node: '', endpoint: plugin.endpoint },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json<{ message: string }>().message).toMatch(
      /a cluster-scoped plugin \(empty node\) needs an admin token/,
    );

    const res = await register({ node: '', endpoint: plugin.endpoint });
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe('/v1/plugins/_cluster/fabric.example.com');
    expect(res.json()).toMatchObject({ node: '', driver: 'fabric.example.com' });
    const status = await h.app.inject({
      method: 'GET',
      url: '/v1/plugins/_cluster/fabric.example.com',
      headers: admin,
    });
    expect(status.statusCode).toBe(200);
    expect(status.json()).toMatchObject({ node: '', driver: 'fabric.example.com' });
    const removed = await h.app.inject({
      method: 'DELETE',
      url: '/v1/plugins/_cluster/fabric.example.com?grace=0s',
      headers: admin,
    });
    expect(removed.statusCode).toBe(200);
    expect(await h.store.get({ node: '', driver: 'fabric.example.com' })).toEqual([]);
  });

  it('registers a plugin without the registration service from the declared driver', async () => {
    const plugin = await driver('bare', 'no-registration-service');
    const res = await register({
      node: 'node-a',
      endpoint: plugin.endpoint,
      driver: 'bare.example.com',
      supportedVersions: ['v1.ResourcePublisher'],
    });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ driver: 'bare.example.com' });
  });

  const refusals: [string, Behaviour, number, string, RegExp][] = [
    ['a GetInfo timeout', 'hang', 502, 'plugin-timeout', /GetInfo .*: no answer within 300ms/],
    [
      'a plugin of another type',
      { ...gpu, type: 'CSIPlugin' },
      422,
      'wrong-plugin-type',
      /the plugin is a "CSIPlugin", not a "DRAPlugin"/,
    ],
    [
      'unsupported versions',
      { ...gpu, supportedVersions: ['v1alpha4.Node'] },
      422,
      'unsupported-versions',
      /\["v1alpha4.Node"\] is supported by slicekeeper \["v1.ResourcePublisher", "1.0.0"\]/,
    ],
  ];
  it.each(refusals)(
    'refuses %s and tells the plugin why',
    async (name, behaviour, status, code, message) => {
      const plugin = await driver(name.replace(/\W/g, '-'), behaviour);
      const before = await h.redisState();
      const res = await register({ node: 'node-b', endpoint: plugin.endpoint });
      expect(res.statusCode).toBe(status);
      expect(res.json()).toEqual({
        code,
        message: expect.stringMatching(message) as unknown,
        details: [],
      });
      expect(plugin.told).toEqual([
        { pluginRegistered: false, error: res.json<{ message: string }>().message },
      ]);
      expect(await h.redisState()).toEqual(before);
    },
  );

  it('answers 502 when nothing listens on the socket', async () => {
    const res = await register({ node: 'node-b', endpoint: `unix://${dir}/nobody.sock` });
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({
      code: 'plugin-unreachable',
      message: expect.stringContaining('connect ENOENT') as unknown,
    });
  });
});
