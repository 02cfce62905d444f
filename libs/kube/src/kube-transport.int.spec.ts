import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeTransport } from './kube-transport';

/**
 * The credentials each request carries: what a real API server would see from each kubeconfig
 * user (an auth provider's through client-node, the rest read by `loadClusterAccess`).
 */
describe('KubeTransport credentials', () => {
  let server: Server;
  let seen: IncomingHttpHeaders[];
  let groups: (string[] | undefined)[];
  let url: string;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-transport-'));
    server = createServer((req, res) => {
      seen.push(req.headers);
      groups.push(req.headersDistinct['impersonate-group']);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    seen = [];
    groups = [];
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  /** Two GETs with a kubeconfig whose user is `user`; the headers the server saw. */
  async function headersFor(user: Record<string, unknown>): Promise<IncomingHttpHeaders[]> {
    const text = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: url } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    });
    const transport = new KubeTransport({ kind: 'yaml', text });
    try {
      for (let i = 0; i < 2; i++) {
        await transport.request({
          method: 'GET',
          path: '/version',
          signal: new AbortController().signal,
        });
      }
    } finally {
      transport.close();
    }
    return seen;
  }

  it("sends the token of the user's token file on every request", async () => {
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'projected-token');
    const headers = await headersFor({
      'auth-provider': { name: 'tokenFile', config: { tokenFile } },
    });
    expect(headers.map((h) => h.authorization)).toEqual([
      'Bearer projected-token',
      'Bearer projected-token',
    ]);
  });

  it('sends a static token', async () => {
    const headers = await headersFor({ token: 'static-token' });
    expect(headers.map((h) => h.authorization)).toEqual([
      'Bearer static-token',
      'Bearer static-token',
    ]);
  });

  it('sends basic credentials, an empty password as empty', async () => {
    const headers = await headersFor({ username: 'admin' });
    const basic = `Basic ${Buffer.from('admin:').toString('base64')}`;
    expect(headers.map((h) => h.authorization)).toEqual([basic, basic]);
  });

  it('impersonates the configured user', async () => {
    const headers = await headersFor({ token: 't', as: 'system:serviceaccount:dra:syncer' });
    expect(headers.map((h) => h['impersonate-user'])).toEqual([
      'system:serviceaccount:dra:syncer',
      'system:serviceaccount:dra:syncer',
    ]);
  });

  it('impersonates groups with one header line each, as the API server reads them', async () => {
    await headersFor({ token: 't', as: 'jane', 'as-groups': ['dev', 'ops'] });
    expect(groups).toEqual([
      ['dev', 'ops'],
      ['dev', 'ops'],
    ]);
  });

  it('sends no credentials for a user without any', async () => {
    const headers = await headersFor({});
    expect(headers.map((h) => h.authorization)).toEqual([undefined, undefined]);
  });
});
