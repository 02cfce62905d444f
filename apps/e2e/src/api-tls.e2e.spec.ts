import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { repoRoot } from '@slicekeeper/local-stack';
import { DriverServer } from '@slicekeeper/driver-kit';
import { RegistrationClient } from '@slicekeeper/registration-client';
import { System, gpuInventory } from './harness';
import { createCa, issueServerCertificate, replaceCertificate } from './harness/test-certificates';
import type { TestCa } from './harness/test-certificates';

const GPU = 'gpu.example.com';
/** Debian's interpreter, with python3-grpcio and python3-protobuf (not a pyenv one on PATH). */
const PYTHON = '/usr/bin/python3';
const run = promisify(execFile);

/** Registers once with the Python SDK's client; prints `registered` or `refused: <error>`. */
const PYTHON_REGISTER = `
import sys
from slicekeeper_driver.registration import PluginIdentity, RegistrationClient, RegistrationError
url, token, ca_file, endpoint = sys.argv[1:]
try:
    RegistrationClient(url, token=token, ca_file=ca_file).register(
        PluginIdentity(node="node-a", driver="gpu.example.com", endpoint=endpoint))
    print("registered")
except RegistrationError as error:
    print(f"refused: {error}")
`;

/**
 * Issue 27: bearer tokens do not cross the network in clear text. The registration API serves
 * HTTPS from a certificate and key file; a client verifies it against the CA it is configured
 * with, and a rotated certificate is served without a restart. Every service is a process.
 */
describe('the registration API over HTTPS', () => {
  let dir: string;
  let ca: TestCa;
  let otherCa: TestCa;
  let live: { certFile: string; keyFile: string };
  let system: System;
  let driver: DriverServer | undefined;
  let endpoint: string;

  /** The common name of the certificate a new connection is served, verified against `ca`. */
  async function servedName(): Promise<string> {
    const url = new URL(system.apiUrl);
    const caPem = await readFile(ca.certFile);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: url.hostname, port: Number(url.port), ca: caPem }, () => {
        const subject = socket.getPeerCertificate().subject;
        socket.end();
        resolve([subject.CN].flat().join(','));
      });
      socket.on('error', reject);
    });
  }

  const client = (caFile: string) =>
    new RegistrationClient({ baseUrl: system.apiUrl, token: system.nodeToken('node-a'), caFile });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'api-tls-'));
    ca = await createCa(dir, 'slicekeeper-ca');
    otherCa = await createCa(dir, 'other-ca');
    await mkdir(join(dir, 'live'));
    live = { certFile: join(dir, 'live', 'tls.crt'), keyFile: join(dir, 'live', 'tls.key') };
    await replaceCertificate(await issueServerCertificate(dir, ca, 'first'), live);
    system = await System.start({ name: 'api-tls', nodes: ['node-a'], apiTls: live });
    const socketDir = join(system.stateDir, 'sockets', 'node-a');
    await mkdir(socketDir, { recursive: true });
    endpoint = `unix://${join(socketDir, `${GPU}.sock`)}`;
    driver = new DriverServer({ driverName: GPU, endpoint, inventory: gpuInventory() });
    await driver.start();
  }, 90_000);

  afterAll(async () => {
    await driver?.close();
    await system.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves HTTPS only: a client that trusts its CA registers', async () => {
    expect(system.apiUrl).toMatch(/^https:/);
    await expect(client(ca.certFile).register({ node: 'node-a', endpoint })).resolves.toMatchObject(
      { node: 'node-a', driver: GPU, endpoint },
    );
  });

  it('a client configured with another CA refuses the API (the TLS handshake fails)', async () => {
    await expect(
      client(otherCa.certFile).register({ node: 'node-a', endpoint }),
    ).rejects.toMatchObject({
      message: expect.stringMatching(
        /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify the first certificate/,
      ) as unknown,
    });
  });

  it.each([
    { name: 'trusts the API through its CA', ca: () => ca, answer: /^registered$/ },
    {
      name: 'refuses the API with another CA',
      ca: () => otherCa,
      answer: /^refused: POST \/v1\/plugins: .*CERTIFICATE_VERIFY_FAILED/,
    },
  ])('the Python SDK’s client (ca_file) $name', async ({ ca: caOf, answer }) => {
    const { stdout } = await run(
      PYTHON,
      ['-c', PYTHON_REGISTER, system.apiUrl, system.nodeToken('node-a'), caOf().certFile, endpoint],
      { env: { PYTHONPATH: join(repoRoot, 'clients', 'python') }, timeout: 30_000 },
    );
    expect(stdout.trim()).toMatch(answer);
  });

  it('a rotated certificate is served to new connections without a restart', async () => {
    const pid = system.servicePid('registration-api');
    expect(await servedName()).toBe('first');
    await replaceCertificate(await issueServerCertificate(dir, ca, 'rotated'), live);
    await system.until(
      'the rotated certificate served',
      async () => (await servedName()) === 'rotated',
    );
    expect(system.servicePid('registration-api')).toBe(pid);
    await expect(client(ca.certFile).register({ node: 'node-a', endpoint })).resolves.toMatchObject(
      { node: 'node-a', driver: GPU },
    );
  });
});
