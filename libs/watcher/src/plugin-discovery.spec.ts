import { EndpointPolicy } from '@slicekeeper/admission';
import type {
  AdmittedEndpoint,
  PluginInfo,
  PluginProber,
  PluginSession,
  RegistrationOutcome,
} from '@slicekeeper/admission';
import type { Registration, SliceKey } from '@slicekeeper/contracts';
import type { RegisterRequest } from '@slicekeeper/registration-client';
import { ManualClock, flushPromises } from '@slicekeeper/time/testing';
import { PluginDiscovery, infoProblem, serviceEndpoint } from './plugin-discovery';
import type { DiscoveryRegistrar } from './plugin-discovery';
import type { SocketDirectory } from './registration-directory';
import { silentLogger } from './testing/fakes';

const NODE = 'node-a';
const DIR = '/reg';
const GPU: PluginInfo = {
  type: 'DRAPlugin',
  name: 'gpu.example.com',
  endpoint: '',
  supportedVersions: ['v1.ResourcePublisher'],
};

/** A registration directory whose entries the test sets, and whose watch it fires. */
class FakeDirectory implements SocketDirectory {
  readonly path = DIR;
  readonly sockets = new Map<string, string>();
  onChange: (() => void) | undefined;
  async prepare(): Promise<void> {
    await Promise.resolve();
  }
  list(): Promise<Map<string, string>> {
    return Promise.resolve(new Map(this.sockets));
  }
  watch(onChange: () => void): { close(): void } {
    this.onChange = onChange;
    return { close: () => (this.onChange = undefined) };
  }
  /** Puts (or replaces) a socket and fires the watch. */
  put(name: string, identity: string): void {
    this.sockets.set(`${DIR}/${name}`, identity);
    this.onChange?.();
  }
  remove(name: string): void {
    this.sockets.delete(`${DIR}/${name}`);
    this.onChange?.();
  }
}

/** Plugins by the real path of their socket: their GetInfo answer and what they were told. */
class FakeProber implements PluginProber {
  readonly infos = new Map<string, PluginInfo | undefined>();
  readonly told = new Map<string, RegistrationOutcome[]>();
  readonly dialled: string[] = [];
  connect(endpoint: AdmittedEndpoint): Promise<PluginSession> {
    const path = endpoint.target.slice('unix://'.length);
    this.dialled.push(path);
    const told = this.told.get(path) ?? [];
    this.told.set(path, told);
    const session: PluginSession = {
      getInfo: () => Promise.resolve(this.infos.get(path)),
      notify: (outcome) => {
        told.push(outcome);
        return Promise.resolve();
      },
      close: () => undefined,
    };
    return Promise.resolve(session);
  }
}

/** The registration API: answers POST with a registration, or with the next scripted refusal. */
class FakeRegistrar implements DiscoveryRegistrar {
  readonly calls: string[] = [];
  readonly requests: RegisterRequest[] = [];
  readonly refusals: Error[] = [];
  /** When set, register waits for it: a registration in flight. */
  gate: Promise<void> | undefined;
  inFlight = 0;
  maxInFlight = 0;
  async register(request: RegisterRequest): Promise<Registration> {
    this.calls.push(`POST ${request.node}/${request.driver ?? ''} ${request.endpoint}`);
    this.requests.push(request);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.gate;
      const refusal = this.refusals.shift();
      if (refusal !== undefined) throw refusal;
      return {
        node: request.node,
        driver: request.driver ?? '',
        endpoint: request.endpoint,
        version: 'v1.ResourcePublisher',
        registeredAt: '2026-11-26T12:00:00.000Z',
        sequence: this.calls.length,
      };
    } finally {
      this.inFlight--;
    }
  }
  deregister(plugin: SliceKey & { endpoint: string }): Promise<void> {
    this.calls.push(`DELETE ${plugin.node}/${plugin.driver} ${plugin.endpoint}`);
    return Promise.resolve();
  }
}

function setup(links: Record<string, string> = {}) {
  const directory = new FakeDirectory();
  const prober = new FakeProber();
  const registrar = new FakeRegistrar();
  const clock = new ManualClock();
  // The real endpoint policy, over a file system where `links` are symlinks.
  const policy = new EndpointPolicy({
    socketDirectories: [DIR, '/run/drivers'],
    fileSystem: {
      realpath: (path) => Promise.resolve(links[path] ?? path),
      lstat: () => Promise.resolve({}),
    },
  });
  const discovery = new PluginDiscovery({
    directory,
    nodeName: NODE,
    policy,
    prober,
    registrar,
    logger: silentLogger,
    clock,
    backoff: { initialMs: 500, maxMs: 4000, jitter: 0 },
  });
  /** Lets the debounce pass and the attempts it starts settle. */
  const settle = () => clock.advance(100);
  return { directory, prober, registrar, clock, discovery, settle };
}

describe('PluginDiscovery', () => {
  it('registers a socket already there at start, and tells it (kubelet: GetInfo, register, NotifyRegistrationStatus)', async () => {
    const { directory, prober, registrar, discovery } = setup();
    directory.sockets.set(`${DIR}/gpu.sock`, 'i1');
    prober.infos.set(`${DIR}/gpu.sock`, GPU);
    await discovery.start();
    await flushPromises();
    expect(registrar.calls).toEqual([`POST ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`]);
    // probedOnNode: the API dials nothing, so the plugin is told once, by the watcher.
    expect(registrar.requests).toEqual([
      {
        node: NODE,
        endpoint: `unix://${DIR}/gpu.sock`,
        driver: 'gpu.example.com',
        supportedVersions: ['v1.ResourcePublisher'],
        probedOnNode: true,
      },
    ]);
    expect(prober.told.get(`${DIR}/gpu.sock`)).toEqual([{ registered: true }]);
    expect(discovery.registered).toBe(1);
    await discovery.close();
  });

  it('registers GetInfo’s endpoint, the resource service’s socket, when the plugin names one', async () => {
    const { directory, prober, registrar, discovery, settle } = setup();
    await discovery.start();
    prober.infos.set(`${DIR}/k130-reg.sock`, {
      ...GPU,
      endpoint: '/run/drivers/k130.sock',
      supportedVersions: ['1.0.0'],
    });
    directory.put('k130-reg.sock', 'i1');
    await settle();
    expect(registrar.calls).toEqual([`POST ${NODE}/gpu.example.com unix:///run/drivers/k130.sock`]);
    await discovery.close();
  });

  it('refuses a plugin whose GetInfo names a service socket that is really outside the allowed directories, and tells it why', async () => {
    const { directory, prober, registrar, discovery, settle, clock } = setup({
      '/run/drivers/k130.sock': '/var/run/docker.sock',
    });
    await discovery.start();
    prober.infos.set(`${DIR}/k130-reg.sock`, { ...GPU, endpoint: '/run/drivers/k130.sock' });
    directory.put('k130-reg.sock', 'i1');
    await settle();
    await clock.advance(60_000);
    expect(registrar.calls).toEqual([]);
    expect(prober.told.get(`${DIR}/k130-reg.sock`)).toEqual([
      {
        registered: false,
        error: expect.stringContaining('the socket is really /var/run/docker.sock') as unknown,
      },
    ]);
    await discovery.close();
  });

  it('leaves a TCP endpoint GetInfo names to the API to dial and check (no probedOnNode)', async () => {
    const { directory, prober, registrar, discovery, settle } = setup();
    await discovery.start();
    prober.infos.set(`${DIR}/net-reg.sock`, { ...GPU, endpoint: '10.0.0.7:9000' });
    directory.put('net-reg.sock', 'i1');
    await settle();
    expect(registrar.requests).toEqual([
      {
        node: NODE,
        endpoint: '10.0.0.7:9000',
        driver: 'gpu.example.com',
        supportedVersions: ['v1.ResourcePublisher'],
      },
    ]);
    await discovery.close();
  });

  it('deregisters a removed socket with the endpoint the API stored (the API applies its removal grace)', async () => {
    const { directory, prober, registrar, discovery, settle } = setup();
    prober.infos.set(`${DIR}/gpu.sock`, GPU);
    await discovery.start();
    directory.put('gpu.sock', 'i1');
    await settle();
    directory.remove('gpu.sock');
    await settle();
    expect(registrar.calls).toEqual([
      `POST ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`,
      `DELETE ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`,
    ]);
    expect(discovery.registered).toBe(0);
    await discovery.close();
  });

  it('refuses a socket that is a symlink out of the allowed directories: never dialled, not retried', async () => {
    const { directory, prober, registrar, discovery, settle, clock } = setup({
      [`${DIR}/evil.sock`]: '/var/run/docker.sock',
    });
    await discovery.start();
    directory.put('evil.sock', 'i1');
    await settle();
    await clock.advance(60_000);
    expect(prober.dialled).toEqual([]);
    expect(registrar.calls).toEqual([]);
    await discovery.close();
  });

  it.each([
    {
      name: 'validatePlugin-wrong-type',
      info: { ...GPU, type: 'CSIPlugin' },
      error: 'the plugin is a "CSIPlugin", not a "DRAPlugin"',
    },
    {
      name: 'validatePlugin-no-supported-version',
      info: { ...GPU, supportedVersions: ['v1beta1.DRAPlugin'] },
      error: expect.stringContaining('none of the plugin') as unknown as string,
    },
  ])('tells a plugin it refused ($name) why, and registers nothing', async ({ info, error }) => {
    const { directory, prober, registrar, discovery, settle } = setup();
    await discovery.start();
    prober.infos.set(`${DIR}/gpu.sock`, info);
    directory.put('gpu.sock', 'i1');
    await settle();
    expect(registrar.calls).toEqual([]);
    expect(prober.told.get(`${DIR}/gpu.sock`)).toEqual([{ registered: false, error }]);
    await discovery.close();
  });

  it('tells the plugin the API’s refusal, and retries with backoff until the API accepts', async () => {
    const { directory, prober, registrar, discovery, settle, clock } = setup();
    await discovery.start();
    prober.infos.set(`${DIR}/gpu.sock`, GPU);
    registrar.refusals.push(
      new Error('POST /v1/plugins: 403 forbidden: may not create plugins "gpu.example.com"'),
    );
    directory.put('gpu.sock', 'i1');
    await settle();
    expect(prober.told.get(`${DIR}/gpu.sock`)).toEqual([
      {
        registered: false,
        error: 'POST /v1/plugins: 403 forbidden: may not create plugins "gpu.example.com"',
      },
    ]);
    expect(clock.pending()).toContain(500);
    await clock.advance(500);
    expect(registrar.calls).toHaveLength(2);
    expect(prober.told.get(`${DIR}/gpu.sock`)?.at(-1)).toEqual({ registered: true });
    await discovery.close();
  });

  it('never has two registrations of one socket in flight; a socket removed meanwhile is deregistered after', async () => {
    const { directory, prober, registrar, discovery, settle } = setup();
    await discovery.start();
    prober.infos.set(`${DIR}/gpu.sock`, GPU);
    let open = (): void => undefined;
    registrar.gate = new Promise<void>((resolve) => (open = resolve));
    directory.put('gpu.sock', 'i1');
    await settle();
    directory.put('gpu.sock', 'i2');
    await settle();
    directory.remove('gpu.sock');
    await settle();
    expect(registrar.maxInFlight).toBe(1);
    open();
    await settle();
    expect(registrar.calls).toEqual([
      `POST ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`,
      `DELETE ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`,
    ]);
    await discovery.close();
  });

  it('registers a replaced socket again (a restarted driver), as kubelet does for a new timestamp', async () => {
    const { directory, prober, registrar, discovery, settle } = setup();
    prober.infos.set(`${DIR}/gpu.sock`, GPU);
    await discovery.start();
    directory.put('gpu.sock', 'i1');
    await settle();
    directory.put('gpu.sock', 'i2');
    await settle();
    expect(registrar.calls).toEqual([
      `POST ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`,
      `POST ${NODE}/gpu.example.com unix://${DIR}/gpu.sock`,
    ]);
    expect(prober.told.get(`${DIR}/gpu.sock`)).toEqual([
      { registered: true },
      { registered: true },
    ]);
    await discovery.close();
  });

  it('finds a socket whose event the file system did not deliver at the next rescan', async () => {
    const { directory, prober, registrar, discovery, clock } = setup();
    prober.infos.set(`${DIR}/gpu.sock`, GPU);
    await discovery.start();
    directory.sockets.set(`${DIR}/gpu.sock`, 'i1');
    await clock.advance(10_000);
    expect(registrar.calls).toHaveLength(1);
    await discovery.close();
  });
});

describe('serviceEndpoint', () => {
  it.each([
    { name: 'registration-socket-itself', endpoint: '', expected: 'unix:///reg/gpu.sock' },
    { name: 'bare-socket-path', endpoint: '/run/gpu.sock', expected: 'unix:///run/gpu.sock' },
    { name: 'uri', endpoint: 'unix:///run/gpu.sock', expected: 'unix:///run/gpu.sock' },
  ])('$name', ({ endpoint, expected }) => {
    expect(serviceEndpoint({ ...GPU, endpoint }, '/reg/gpu.sock')).toBe(expected);
  });
});

describe('infoProblem', () => {
  it.each([
    { name: 'valid', info: GPU, problem: undefined },
    {
      name: 'driverNameProblem',
      info: { ...GPU, name: 'GPU' },
      problem: expect.stringContaining('driver name "GPU"') as unknown as string,
    },
    {
      name: 'kubelet-130-version',
      info: { ...GPU, supportedVersions: ['1.0.0'] },
      problem: undefined,
    },
  ])('$name', ({ info, problem }) => {
    expect(infoProblem(info)).toEqual(problem);
  });
});
