import { TerminalError, TransientError } from '@slicekeeper/errors';
import { admissionError } from './admission-error';
import { admitPlugin } from './admit-plugin';
import type { DialAdmission } from './admit-plugin';
import { EndpointPolicy } from './endpoint-policy';
import type { AdmittedEndpoint, SocketFileSystem } from './endpoint-policy';
import type { PluginInfo, PluginProber, RegistrationOutcome } from './plugin-prober';

/** Every path is real as written: these tests are about the plugin, not its socket. */
const asWritten: SocketFileSystem = {
  realpath: (path) => Promise.resolve(path),
  lstat: () => Promise.resolve({}),
};
const policy = new EndpointPolicy({ socketDirectories: ['/plugins'], fileSystem: asWritten });

/** A prober whose plugin answers with `info` and records what it is told. */
function fakeProber(info: PluginInfo | undefined | Error) {
  const told: RegistrationOutcome[] = [];
  let closed = 0;
  const prober: PluginProber = {
    connect: () =>
      Promise.resolve({
        getInfo: () => (info instanceof Error ? Promise.reject(info) : Promise.resolve(info)),
        notify: (outcome) => {
          told.push(outcome);
          return Promise.resolve();
        },
        close: () => {
          closed++;
        },
      }),
  };
  return { prober, told, closed: () => closed };
}

const gpu: PluginInfo = {
  type: 'DRAPlugin',
  name: 'gpu.example.com',
  endpoint: '',
  supportedVersions: ['v1.ResourcePublisher'],
};

async function admit(
  info: PluginInfo | undefined | Error,
  extra: Partial<DialAdmission<string>> = {},
) {
  const fake = fakeProber(info);
  const endpoint = await policy.admit('unix:///plugins/gpu.sock');
  const outcome = await admitPlugin<string>({
    endpoint,
    prober: fake.prober,
    policy,
    register: (plugin) =>
      Promise.resolve(`stored ${plugin.driver} ${plugin.version} ${plugin.endpoint}`),
    ...extra,
  }).catch((error: unknown) => error);
  expect(fake.closed()).toBe(1);
  return { outcome, told: fake.told };
}

describe('admitPlugin', () => {
  it('stores a valid plugin and tells it so', async () => {
    const { outcome, told } = await admit(gpu);
    expect(outcome).toEqual({
      plugin: {
        driver: 'gpu.example.com',
        version: 'v1.ResourcePublisher',
        endpoint: 'unix:///plugins/gpu.sock',
        servesRegistration: true,
      },
      registered: 'stored gpu.example.com v1.ResourcePublisher unix:///plugins/gpu.sock',
    });
    expect(told).toEqual([{ registered: true }]);
  });

  it.each([
    ['kubelet 1.30 driver', ['1.0.0'], '1.0.0'],
    ['driver offering both', ['1.0.0', 'v1.ResourcePublisher'], 'v1.ResourcePublisher'],
  ])('agrees on the version with a %s', async (_name, supportedVersions, version) => {
    const { outcome, told } = await admit({ ...gpu, supportedVersions });
    expect(outcome).toMatchObject({ plugin: { driver: 'gpu.example.com', version } });
    expect(told).toEqual([{ registered: true }]);
  });

  it.each([
    [
      'wrong type',
      { ...gpu, type: 'CSIPlugin' },
      {},
      'wrong-plugin-type',
      /"CSIPlugin", not a "DRAPlugin"/,
    ],
    ['uppercase name', { ...gpu, name: 'GPU.example.com' }, {}, 'invalid-driver-name', /RFC 1123/],
    ['long name', { ...gpu, name: `${'a'.repeat(60)}.com` }, {}, 'invalid-driver-name', /63/],
    [
      'unsupported versions',
      { ...gpu, supportedVersions: ['v0.Legacy'] },
      {},
      'unsupported-versions',
      /\["v0.Legacy"\].*\["v1.ResourcePublisher", "1.0.0"\]/,
    ],
    ['driver mismatch', gpu, { declared: { driver: 'nic.example.com' } }, 'driver-mismatch', /nic/],
    [
      'forbidden service endpoint',
      { ...gpu, endpoint: '/etc/evil.sock' },
      {},
      'endpoint-forbidden',
      /allowed directory/,
    ],
  ])('refuses a plugin with %s and tells it why', async (_name, info, extra, code, message) => {
    const { outcome, told } = await admit(info, extra);
    expect(outcome).toBeInstanceOf(TerminalError);
    expect(outcome).toMatchObject({ code, message });
    expect(told).toEqual([{ registered: false, error: (outcome as Error).message }]);
  });

  it('uses the declaration for a plugin without the registration service', async () => {
    const declared = { driver: 'gpu.example.com', supportedVersions: ['v1.ResourcePublisher'] };
    const { outcome } = await admit(undefined, { declared });
    expect(outcome).toMatchObject({
      plugin: { driver: 'gpu.example.com', servesRegistration: false },
    });
    const missing = await admit(undefined, { declared: { driver: 'gpu.example.com' } });
    expect(missing.outcome).toMatchObject({ code: 'missing-plugin-info' });
  });

  it('follows a service endpoint named by the plugin, as kubelet does', async () => {
    const { outcome } = await admit({ ...gpu, endpoint: '/plugins/gpu/service.sock' });
    expect(outcome).toMatchObject({ plugin: { endpoint: 'unix:///plugins/gpu/service.sock' } });
  });

  it('tells the plugin when storing fails', async () => {
    const { outcome, told } = await admit(gpu, {
      register: () => Promise.reject(new TransientError('redis down')),
    });
    expect(outcome).toBeInstanceOf(TransientError);
    expect(told).toEqual([{ registered: false, error: 'redis down' }]);
  });

  it('tells the plugin when its GetInfo failed', async () => {
    const { outcome, told } = await admit(admissionError('plugin-timeout', 'slow'));
    expect(outcome).toMatchObject({ code: 'plugin-timeout' });
    expect(told).toEqual([{ registered: false, error: 'slow' }]);
  });

  it('keeps the registration when the plugin cannot be told', async () => {
    const endpoint: AdmittedEndpoint = await policy.admit('unix:///plugins/gpu.sock');
    const prober: PluginProber = {
      connect: () =>
        Promise.resolve({
          getInfo: () => Promise.resolve(gpu),
          notify: () => Promise.reject(new Error('connection reset')),
          close: () => undefined,
        }),
    };
    const result = await admitPlugin({
      endpoint,
      prober,
      policy,
      register: () => Promise.resolve(1),
    });
    expect(result).toMatchObject({ registered: 1, notifyError: 'connection reset' });
  });

  describe('probedOnNode (the node-mode watcher dialled it)', () => {
    const declared = { driver: 'gpu.example.com', supportedVersions: ['1.0.0', 'v9.Future'] };
    /** A policy whose every file-system call fails: a probed plugin must not need one. */
    const noFileSystem = new EndpointPolicy({
      socketDirectories: ['/plugins'],
      fileSystem: {
        realpath: () => Promise.reject(new Error('realpath called')),
        lstat: () => Promise.reject(new Error('lstat called')),
      },
    });
    const admitProbed = (endpoint: string, declaredPlugin = declared) => {
      const stored: string[] = [];
      const outcome = admitPlugin({
        probedOnNode: true,
        endpoint,
        declared: declaredPlugin,
        policy: noFileSystem,
        register: (plugin) => {
          stored.push(plugin.endpoint);
          return Promise.resolve(plugin.version);
        },
      }).catch((error: unknown) => error);
      return { outcome, stored };
    };

    it('accepts-lexically-inside-the-directories: negotiates from the declared versions, no realpath', async () => {
      const { outcome, stored } = admitProbed('unix:///plugins/gpu.sock');
      expect(await outcome).toEqual({
        plugin: {
          driver: 'gpu.example.com',
          version: '1.0.0',
          endpoint: 'unix:///plugins/gpu.sock',
          servesRegistration: true,
        },
        registered: '1.0.0',
      });
      expect(stored).toEqual(['unix:///plugins/gpu.sock']);
    });

    it.each([
      [
        'outside-the-directories',
        'unix:///etc/gpu.sock',
        declared,
        'endpoint-forbidden',
        /allowed directory/,
      ],
      [
        'dot-dot-out-of-the-directory',
        'unix:///plugins/../etc/gpu.sock',
        declared,
        'invalid-endpoint',
        /must be normalized/,
      ],
      ['tcp-endpoint', '10.0.0.1:5000', declared, 'endpoint-forbidden', /must be a unix socket/],
      [
        'no-common-version',
        'unix:///plugins/gpu.sock',
        { driver: 'gpu.example.com', supportedVersions: ['v0.Legacy'] },
        'unsupported-versions',
        /v0.Legacy/,
      ],
      [
        'invalid-driver-name',
        'unix:///plugins/gpu.sock',
        { driver: 'GPU', supportedVersions: ['1.0.0'] },
        'invalid-driver-name',
        /driver name "GPU"/,
      ],
    ])('refuses-%s and stores nothing', async (_name, endpoint, declaredPlugin, code, message) => {
      const { outcome, stored } = admitProbed(endpoint, declaredPlugin);
      expect(await outcome).toMatchObject({ code, message });
      expect(stored).toEqual([]);
    });
  });
});
