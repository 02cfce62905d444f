import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@slicekeeper/time/testing';
import { stringify } from 'yaml';
import { loadClusterAccess } from './kubeconfig';

/** A kubeconfig of one context, `cluster` and `user` as given. */
function kubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown> | null,
): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}

const SERVER = { server: 'https://10.0.0.1:6443/' };

describe('loadClusterAccess', () => {
  let dir: string;
  let clock: ManualClock;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubeconfig-'));
    clock = new ManualClock();
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const fromText = (text: string) => loadClusterAccess({ kind: 'yaml', text }, clock);

  it('reads files a kubeconfig names relative to its own directory, as kubectl does', async () => {
    await writeFile(join(dir, 'ca.crt'), 'CA PEM');
    await writeFile(join(dir, 'client.crt'), 'CERT PEM');
    const path = join(dir, 'config');
    await writeFile(
      path,
      kubeconfig(
        { ...SERVER, 'certificate-authority': 'ca.crt', 'tls-server-name': 'kubernetes' },
        {
          'client-certificate': 'client.crt',
          'client-key-data': Buffer.from('KEY PEM').toString('base64'),
        },
      ),
    );
    const access = loadClusterAccess({ kind: 'file', path }, clock);
    expect({
      server: access.server,
      ca: access.ca?.toString(),
      cert: access.cert?.toString(),
      key: access.key?.toString(),
      skipTLSVerify: access.skipTLSVerify,
      tlsServerName: access.tlsServerName,
    }).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: 'CA PEM',
      cert: 'CERT PEM',
      key: 'KEY PEM',
      skipTLSVerify: false,
      tlsServerName: 'kubernetes',
    });
    expect(await access.credentials()).toEqual({});
  });

  it("re-reads a user's tokenFile once a minute has passed, not on every request", async () => {
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'first\n');
    const access = fromText(kubeconfig(SERVER, { tokenFile }));
    await writeFile(tokenFile, 'rotated');
    await clock.advance(59_999);
    expect(await access.credentials()).toEqual({ Authorization: 'Bearer first' });
    await clock.advance(1);
    expect(await access.credentials()).toEqual({ Authorization: 'Bearer rotated' });
  });

  it('sends impersonation as client-go does: one header line per group and extra value', async () => {
    const access = fromText(
      kubeconfig(SERVER, {
        token: 't',
        as: 'jane',
        'as-uid': '42',
        'as-groups': ['dev', 'ops'],
        'as-user-extra': { 'reason/why': ['audit', 'debug'] },
      }),
    );
    expect(await access.credentials()).toEqual({
      Authorization: 'Bearer t',
      'Impersonate-User': 'jane',
      'Impersonate-Uid': '42',
      'Impersonate-Group': ['dev', 'ops'],
      'Impersonate-Extra-reason%2Fwhy': ['audit', 'debug'],
    });
  });

  it('reads a user with no fields as one without credentials', async () => {
    expect(await fromText(kubeconfig(SERVER, null)).credentials()).toEqual({});
  });

  it('runs an exec plugin through client-node, loaded for it', async () => {
    const credential = {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'from-plugin' },
    };
    const access = fromText(
      kubeconfig(SERVER, {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: ['-e', `process.stdout.write(${JSON.stringify(JSON.stringify(credential))})`],
          interactiveMode: 'Never',
        },
      }),
    );
    expect((await access.credentials()).Authorization).toBe('Bearer from-plugin');
  });

  it('builds the in-cluster config as client-go does: https, IPv6 in brackets, token trimmed', async () => {
    await writeFile(join(dir, 'ca.crt'), 'CA PEM');
    await writeFile(join(dir, 'token'), 'sa-token\n');
    const access = loadClusterAccess(
      {
        kind: 'in-cluster',
        host: 'fd00::1',
        port: 443,
        caPath: join(dir, 'ca.crt'),
        tokenPath: join(dir, 'token'),
      },
      clock,
    );
    expect(access.server).toBe('https://[fd00::1]:443');
    expect(access.ca?.toString()).toBe('CA PEM');
    expect(await access.credentials()).toEqual({ Authorization: 'Bearer sa-token' });
  });

  it.each([
    [
      'a cluster without a server',
      kubeconfig({}, {}),
      /^not a kubeconfig: clusters\.0\.cluster\.server: /,
    ],
    [
      'a group list that is not a list',
      kubeconfig(SERVER, { 'as-groups': 'dev' }),
      /^not a kubeconfig: users\.0\.user\.as-groups: /,
    ],
    [
      'no current context',
      stringify({ clusters: [{ name: 'c', cluster: SERVER }] }),
      /^current-context is not set$/,
    ],
    [
      'a context naming no cluster there is',
      stringify({
        contexts: [{ name: 'x', context: { cluster: 'gone' } }],
        'current-context': 'x',
      }),
      /^context "x": no cluster named "gone"$/,
    ],
    [
      'a token and basic credentials at once',
      kubeconfig(SERVER, { token: 't', username: 'admin' }),
      /^user: more than one authentication method found: token and basic auth$/,
    ],
    [
      'a token file that is not there',
      kubeconfig(SERVER, { tokenFile: '/nonexistent/token' }),
      /ENOENT.*\/nonexistent\/token/,
    ],
  ])('refuses %s, naming the field and the rule', (_name, text, message) => {
    expect(() => fromText(text)).toThrow(message);
  });

  it('refuses an in-cluster config without the service environment, in client-go’s words', () => {
    const saved = { ...process.env };
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    try {
      expect(() => loadClusterAccess({ kind: 'in-cluster' }, clock)).toThrow(
        'unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
      );
    } finally {
      process.env = saved;
    }
  });
});
