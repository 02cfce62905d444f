import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
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

  // An auth provider's first request loads @kubernetes/client-node: through jest's module
  // registry its modules took over 30 s once, with the other int suites loading both cores.
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
  }, 120_000);

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

/** A self-signed certificate (its own CA) for `name`, valid for 127.0.0.1; files in `dir`. */
async function selfSigned(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await promisify(execFile)('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ...['-days', '1', '-subj', `/CN=${name}`, '-keyout', key, '-out', cert],
    ...['-addext', 'subjectAltName=IP:127.0.0.1'],
  ]);
  return { cert, key };
}

describe('KubeTransport over HTTPS', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-tls-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A GET to an HTTPS server that asks for a client certificate; the client's common name. */
  async function getWith(
    server: { cert: string; key: string },
    clientCa: string,
    kubeconfig: (url: string) => string,
  ): Promise<string> {
    const https = createTlsServer(
      {
        cert: await readFile(server.cert),
        key: await readFile(server.key),
        ca: await readFile(clientCa),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ client: peer.subject.CN }));
      },
    );
    await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(https.address() as AddressInfo).port}`;
    const path = join(dir, 'config');
    await writeFile(path, kubeconfig(url));
    const transport = new KubeTransport({ kind: 'file', path });
    try {
      const response = await transport.request({
        method: 'GET',
        path: '/version',
        signal: new AbortController().signal,
      });
      return (JSON.parse(response.body) as { client: string }).client;
    } finally {
      transport.close();
      https.closeAllConnections();
      await new Promise((resolve) => https.close(resolve));
    }
  }

  /** A kubeconfig whose paths are relative to its directory, the client key inline. */
  const config = (caFile: string, clientCert: string, clientKey: Buffer) => (url: string) =>
    JSON.stringify({
      clusters: [{ name: 'c', cluster: { server: url, 'certificate-authority': caFile } }],
      users: [
        {
          name: 'u',
          user: {
            'client-certificate': clientCert,
            'client-key-data': clientKey.toString('base64'),
          },
        },
      ],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    });

  it("verifies the server by the kubeconfig's CA and presents its client certificate", async () => {
    const server = await selfSigned(dir, 'apiserver');
    const client = await selfSigned(dir, 'system:node:node-a');
    const key = await readFile(client.key);
    expect(
      await getWith(server, client.cert, config('apiserver.crt', 'system:node:node-a.crt', key)),
    ).toBe('system:node:node-a');
  });

  it('refuses a server its CA did not sign', async () => {
    const server = await selfSigned(dir, 'impostor');
    // The CA the kubeconfig names (other-ca.crt): it did not sign the server's certificate.
    await selfSigned(dir, 'other-ca');
    const client = await selfSigned(dir, 'client');
    const key = await readFile(client.key);
    await expect(
      getWith(server, client.cert, config('other-ca.crt', 'client.crt', key)),
    ).rejects.toThrow(/self[- ]signed certificate|unable to verify/);
  });
});
