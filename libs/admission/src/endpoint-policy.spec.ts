import { EndpointPolicy } from './endpoint-policy';
import { parseIp, parseIpRange, rangeContains } from './ip-range';

describe('IP ranges', () => {
  it.each([
    ['10.0.0.0/8', '10.255.1.2', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['192.168.1.128/25', '192.168.1.200', true],
    ['192.168.1.128/25', '192.168.1.100', false],
    ['fd00::/8', 'fd12:3456::1', true],
    ['fd00::/8', 'fe80::1', false],
    ['10.0.0.0/8', '::ffff:10.1.2.3', true],
    ['::ffff:10.0.0.0/104', '10.1.2.3', true],
    ['2001:db8::/32', '2001:db8:0:0:0:0:0:1', true],
    ['1.2.3.4', '1.2.3.4', true],
    ['1.2.3.4', '1.2.3.5', false],
    ['0.0.0.0/0', 'fd00::1', false],
  ])('%s contains %s: %s', (range, address, expected) => {
    const parsed = parseIpRange(range);
    const ip = parseIp(address);
    if (typeof parsed === 'string' || ip === undefined) throw new Error('unparsable fixture');
    expect(rangeContains(parsed, ip)).toBe(expected);
  });

  it.each(['10.0.0.0/33', 'fd00::/129', 'example.com/8', '10.0.0.0/8/8', '10.0.0.0/x'])(
    'rejects %s',
    (range) => {
      expect(typeof parseIpRange(range)).toBe('string');
    },
  );
});

describe('EndpointPolicy', () => {
  const policy = new EndpointPolicy({
    socketDirectories: ['/var/lib/kubelet/plugins/'],
    tcpHosts: ['10.0.0.0/8', 'fd00::/8', 'gpu.drivers.svc', '*.drivers.example.com'],
  });

  it.each([
    ['unix:///var/lib/kubelet/plugins/gpu/plugin.sock', false],
    ['10.1.2.3:9000', false],
    ['[fd00::7]:9000', false],
    ['gpu.drivers.svc:9000', true],
    ['a.b.drivers.example.com:9000', true],
    ['GPU.Drivers.SVC:9000', true],
  ])('allows %s', (endpoint, resolve) => {
    expect(policy.check(endpoint)).toMatchObject({ ok: true, resolve });
  });

  it.each([
    ['unix:///var/lib/kubelet/plugins/../../../etc/shadow', 'invalid-endpoint', /normalized/],
    ['unix:///var/lib/kubelet/plugins', 'endpoint-forbidden', /inside an allowed directory/],
    ['unix:///var/lib/kubelet/plugins-evil/x.sock', 'endpoint-forbidden', /allowed directory/],
    ['unix:///run/docker.sock', 'endpoint-forbidden', /allowed directory/],
    [`unix:///var/lib/kubelet/plugins/${'a'.repeat(100)}.sock`, 'invalid-endpoint', /107 bytes/],
    ['169.254.169.254:80', 'endpoint-forbidden', /metadata/],
    ['[fd00:ec2::254]:80', 'endpoint-forbidden', /metadata/],
    ['metadata.google.internal:80', 'endpoint-forbidden', /metadata/],
    ['127.0.0.1:9000', 'endpoint-forbidden', /loopback/],
    ['[::1]:9000', 'endpoint-forbidden', /loopback/],
    ['[::ffff:127.0.0.1]:9000', 'endpoint-forbidden', /loopback/],
    ['169.254.10.1:9000', 'endpoint-forbidden', /link-local/],
    ['[fe80::1]:9000', 'endpoint-forbidden', /link-local/],
    ['0.0.0.0:9000', 'endpoint-forbidden', /unspecified/],
    ['224.0.0.1:9000', 'endpoint-forbidden', /multicast/],
    ['192.168.1.1:9000', 'endpoint-forbidden', /not in the TCP allowlist/],
    ['2130706433:9000', 'endpoint-forbidden', /dotted-quad/],
    ['0x7f.1:9000', 'endpoint-forbidden', /dotted-quad/],
    ['localhost:9000', 'endpoint-forbidden', /not in the TCP allowlist/],
    ['evil.example.org:9000', 'endpoint-forbidden', /not in the TCP allowlist/],
    ['drivers.example.com:9000', 'endpoint-forbidden', /not in the TCP allowlist/],
    ['http://10.1.2.3:80', 'invalid-endpoint', /unix:\/\/\/path or host:port/],
  ])('refuses %s', (endpoint, code, message) => {
    const checked = policy.check(endpoint);
    expect(checked).toMatchObject({ ok: false, code });
    expect(!checked.ok && checked.message).toMatch(message);
  });

  it('opens loopback and link-local only when configured, never metadata', () => {
    const open = new EndpointPolicy({ allowLoopback: true, allowLinkLocal: true });
    expect(open.check('127.0.0.1:9000').ok).toBe(true);
    expect(open.check('[fe80::1]:9000').ok).toBe(true);
    expect(open.check('169.254.169.254:80').ok).toBe(false);
    expect(new EndpointPolicy({ tcpHosts: ['0.0.0.0/0'] }).check('127.0.0.1:1').ok).toBe(false);
  });

  it('checks every address a name resolves to and dials the checked one', async () => {
    const resolving = (addresses: string[]) =>
      new EndpointPolicy({
        tcpHosts: ['*.drivers.svc'],
        lookup: (host) =>
          host === 'gpu.drivers.svc'
            ? Promise.resolve(addresses)
            : Promise.reject(new Error('NXDOMAIN')),
      });
    await expect(resolving(['10.0.0.5']).admit('gpu.drivers.svc:9000')).resolves.toMatchObject({
      endpoint: 'gpu.drivers.svc:9000',
      target: '10.0.0.5:9000',
    });
    await expect(
      resolving(['10.0.0.5', '169.254.169.254']).admit('gpu.drivers.svc:9000'),
    ).rejects.toMatchObject({ code: 'endpoint-forbidden', message: /resolves to 169.254.169.254/ });
    await expect(resolving(['127.0.0.1']).admit('gpu.drivers.svc:9000')).rejects.toMatchObject({
      code: 'endpoint-forbidden',
    });
    await expect(resolving([]).admit('gpu.drivers.svc:9000')).rejects.toMatchObject({
      code: 'plugin-unreachable',
    });
    await expect(resolving(['10.0.0.5']).admit('nic.drivers.svc:9000')).rejects.toMatchObject({
      code: 'plugin-unreachable',
      message: /cannot resolve/,
    });
  });

  it('gives up on a resolver that does not answer', async () => {
    const hung = new EndpointPolicy({
      tcpHosts: ['gpu.drivers.svc'],
      lookup: () => new Promise<string[]>(() => undefined),
      lookupTimeoutMs: 20,
    });
    await expect(hung.admit('gpu.drivers.svc:9000')).rejects.toMatchObject({
      code: 'plugin-unreachable',
      message:
        'endpoint "gpu.drivers.svc:9000": cannot resolve "gpu.drivers.svc": no answer within 20ms',
    });
  });

  it('refuses a bad configuration, naming every entry', () => {
    expect(
      () =>
        new EndpointPolicy({
          socketDirectories: ['relative/dir', '/'],
          tcpHosts: ['10.0.0.0/40', 'exa_mple.com', '1.2.3'],
        }),
    ).toThrow(/relative\/dir.*"\/".*10\.0\.0\.0\/40.*exa_mple\.com.*1\.2\.3/);
  });
});
