import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { createLogger } from '@slicekeeper/observability';
import { waitFor } from '@slicekeeper/testing';
import { ManualClock } from '@slicekeeper/time/testing';
import { ServingCertificate, readCertificatePair } from './serving-certificate';
import type { CertificatePair } from './serving-certificate';

const run = promisify(execFile);

/** A self-signed certificate and key, PEM, with `cn` as its common name. */
async function makePair(dir: string, cn: string): Promise<CertificatePair> {
  const [cert, key] = [join(dir, `${cn}.crt`), join(dir, `${cn}.key`)];
  await run('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ...['-days', '1', '-subj', `/CN=${cn}`, '-keyout', key, '-out', cert],
  ]);
  return { cert: await readFile(cert), key: await readFile(key) };
}

/** The common name of the certificate the server presents to a new connection. */
function servedName(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const subject = socket.getPeerCertificate().subject;
      socket.end();
      resolve([subject.CN].flat().join(','));
    });
    socket.on('error', reject);
  });
}

describe('ServingCertificate', () => {
  let dir: string;
  let pairs: Record<'first' | 'rotated' | 'other', CertificatePair>;
  let server: Server;
  let port: number;
  let clock: ManualClock;
  let logs: Record<string, unknown>[];
  let certificate: ServingCertificate;
  let certFile: string;
  let keyFile: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'serving-certificate-'));
    pairs = {
      first: await makePair(dir, 'first'),
      rotated: await makePair(dir, 'rotated'),
      other: await makePair(dir, 'other'),
    };
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  beforeEach(async () => {
    const live = await mkdtemp(join(dir, 'live-'));
    [certFile, keyFile] = [join(live, 'tls.crt'), join(live, 'tls.key')];
    await writeFile(certFile, pairs.first.cert);
    await writeFile(keyFile, pairs.first.key);
    server = createServer(await readCertificatePair(certFile, keyFile), (_req, res) => {
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    clock = new ManualClock();
    logs = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logs.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        callback();
      },
    });
    certificate = new ServingCertificate({
      certFile,
      keyFile,
      current: pairs.first,
      apply: (pair) => {
        server.setSecureContext(pair);
      },
      logger: createLogger({ service: 'test', level: 'debug', destination }),
      clock,
    });
    certificate.start();
  });

  afterEach(async () => {
    await certificate.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /**
   * Writes `pair` over the live files, key first as cert-manager does, lets the debounce fire
   * once a change is seen, and waits for the reload it started.
   */
  async function rotate(pair: CertificatePair): Promise<void> {
    await writeFile(keyFile, pair.key);
    await writeFile(certFile, pair.cert);
    await waitFor(() => clock.pending().length > 0, { description: 'a change seen' });
    await clock.advance(500);
    await certificate.reload();
  }

  it('serves a rotated certificate to new connections without a restart', async () => {
    expect(await servedName(port)).toBe('first');
    await rotate(pairs.rotated);
    expect(await servedName(port)).toBe('rotated');
    expect(logs).toContainEqual(expect.objectContaining({ msg: 'certificate reloaded' }));
  });

  it.each([
    {
      name: 'key-of-another-certificate',
      pair: () => ({ ...pairs.rotated, key: pairs.other.key }),
    },
    {
      name: 'not-pem',
      pair: () => ({ cert: Buffer.from('garbage'), key: Buffer.from('garbage') }),
    },
  ])('keeps serving the previous certificate when the new pair is bad: $name', async ({ pair }) => {
    await rotate(pair());
    expect(await servedName(port)).toBe('first');
    expect(logs).toContainEqual(
      expect.objectContaining({ msg: 'certificate not reloaded; serving the previous one' }),
    );
  });
});
