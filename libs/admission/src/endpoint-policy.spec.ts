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

  describe('IPv6 addresses that embed an IPv4 address', () => {
    // The review's configuration: every IPv6 destination allowed.
    const anyV6 = new EndpointPolicy({ tcpHosts: ['::/0'] });

    it.each([
      ['compatible', '::127.0.0.1', '127.0.0.1', /loopback/],
      ['mapped', '::ffff:127.0.0.1', '127.0.0.1', /loopback/],
      ['mapped, hex', '::ffff:7f00:1', '127.0.0.1', /loopback/],
      ['SIIT', '::ffff:0:127.0.0.1', '127.0.0.1', /loopback/],
      ['NAT64 well-known prefix', '64:ff9b::127.0.0.1', '127.0.0.1', /loopback/],
      ['NAT64 local-use prefix', '64:ff9b:1::127.0.0.1', '127.0.0.1', /loopback/],
      ['NAT64 local-use prefix, subnet', '64:ff9b:1:2:3:4:7f00:1', '127.0.0.1', /loopback/],
      ['compatible metadata', '::169.254.169.254', '169.254.169.254', /metadata/],
      ['SIIT metadata', '::ffff:0:169.254.169.254', '169.254.169.254', /metadata/],
      ['NAT64 metadata', '64:ff9b::169.254.169.254', '169.254.169.254', /metadata/],
      ['NAT64 link-local', '64:ff9b::169.254.1.1', '169.254.1.1', /link-local/],
      ['SIIT unspecified', '::ffff:0:0.0.0.0', '0.0.0.0', /unspecified/],
      ['compatible multicast', '::224.0.0.1', '224.0.0.1', /multicast/],
      ['NAT64 broadcast', '64:ff9b::255.255.255.255', '255.255.255.255', /broadcast/],
      // An IPv6 allowlist does not open IPv4 destinations behind a translator.
      ['NAT64 private', '64:ff9b::10.0.0.5', '10.0.0.5', /not in the TCP allowlist/],
    ])('checks the %s form %s as %s', (_form, address, ipv4, rule) => {
      const checked = anyV6.check(`[${address}]:9000`);
      expect(checked).toMatchObject({ ok: false, code: 'endpoint-forbidden' });
      expect(!checked.ok && checked.message).toMatch(`embeds the IPv4 address ${ipv4}: `);
      expect(!checked.ok && checked.message).toMatch(rule);
      expect(!checked.ok && checked.message).toMatch(`endpoint "[${address}]:9000"`);
    });

    it('keeps ::1 and :: themselves, which are not IPv4-compatible addresses', () => {
      expect(anyV6.check('[::1]:9000')).toMatchObject({ message: /: loopback addresses/ });
      expect(anyV6.check('[::]:9000')).toMatchObject({ message: /: unspecified/ });
      expect(anyV6.check('[2001:db8::1]:9000').ok).toBe(true);
    });

    it('checks the embedded address against an IPv4 allowlist', () => {
      const private10 = new EndpointPolicy({ tcpHosts: ['10.0.0.0/8'] });
      for (const address of ['::ffff:0:10.1.2.3', '64:ff9b::10.1.2.3', '64:ff9b:1::a01:203']) {
        expect([address, private10.check(`[${address}]:9000`).ok]).toEqual([address, true]);
      }
      expect(private10.check('[64:ff9b::11.1.2.3]:9000').ok).toBe(false);
    });

    it('opens an embedded loopback address only with allowLoopback', () => {
      const loopback = new EndpointPolicy({ tcpHosts: ['::/0'], allowLoopback: true });
      expect(loopback.check('[::ffff:0:127.0.0.1]:9000').ok).toBe(true);
      expect(loopback.check('[64:ff9b::169.254.169.254]:9000').ok).toBe(false);
    });

    it('checks the addresses a name resolves to the same way', async () => {
      const rebinding = new EndpointPolicy({
        tcpHosts: ['gpu.drivers.svc'],
        lookup: () => Promise.resolve(['10.0.0.5', '64:ff9b::7f00:1']),
      });
      await expect(rebinding.admit('gpu.drivers.svc:9000')).rejects.toMatchObject({
        code: 'endpoint-forbidden',
        message:
          'endpoint "gpu.drivers.svc:9000": "gpu.drivers.svc" resolves to 64:ff9b::7f00:1, which embeds the IPv4 address 127.0.0.1: loopback addresses are not allowed',
      });
    });
  });

  describe('cloud metadata services', () => {
    const everything = new EndpointPolicy({
      tcpHosts: ['0.0.0.0/0', '::/0'],
      allowLoopback: true,
      allowLinkLocal: true,
    });

    it.each([
      ['169.254.169.254', 'AWS, GCP, Azure, OpenStack IMDS'],
      ['169.254.170.2', 'AWS ECS task metadata'],
      ['169.254.170.23', 'AWS EKS Pod Identity'],
      ['[fd00:ec2::254]', 'AWS IMDS over IPv6'],
      ['[fd00:ec2::23]', 'AWS EKS Pod Identity over IPv6'],
      ['100.100.100.200', 'Alibaba Cloud'],
      ['168.63.129.16', 'Azure wireserver'],
      ['169.254.0.23', 'Tencent Cloud'],
    ])('never dials %s (%s), whatever is allowed', async (host) => {
      expect(everything.check(`${host}:80`)).toMatchObject({
        ok: false,
        code: 'endpoint-forbidden',
        message: `endpoint "${host}:80": metadata services are never dialled`,
      });
      const named = new EndpointPolicy({
        tcpHosts: ['gpu.drivers.svc'],
        lookup: () => Promise.resolve([host.replace(/[[\]]/g, '')]),
      });
      await expect(named.admit('gpu.drivers.svc:80')).rejects.toMatchObject({
        code: 'endpoint-forbidden',
        message: /metadata services are never dialled/,
      });
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
