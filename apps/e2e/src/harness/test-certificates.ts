import { execFile } from 'node:child_process';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A certificate authority made with openssl: its certificate and key files. */
export interface TestCa {
  certFile: string;
  keyFile: string;
}

/** A self-signed CA named `name`, its files in `dir`. */
export async function createCa(dir: string, name: string): Promise<TestCa> {
  const ca = { certFile: join(dir, `${name}.pem`), keyFile: join(dir, `${name}.key`) };
  await run('openssl', [
    ...['req', '-x509', ...EC_KEY, '-days', '1', '-subj', `/CN=${name}`],
    ...['-keyout', ca.keyFile, '-out', ca.certFile],
    ...['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign'],
  ]);
  return ca;
}

/**
 * A server certificate for 127.0.0.1 and localhost, common name `name`, signed by `ca`; its
 * files in `dir` (`<name>.crt`, `<name>.key`).
 */
export async function issueServerCertificate(
  dir: string,
  ca: TestCa,
  name: string,
): Promise<{ certFile: string; keyFile: string }> {
  const [certFile, keyFile, csr, ext] = ['crt', 'key', 'csr', 'ext'].map((e) =>
    join(dir, `${name}.${e}`),
  ) as [string, string, string, string];
  await run('openssl', [
    'req',
    '-new',
    ...EC_KEY,
    '-subj',
    `/CN=${name}`,
    '-keyout',
    keyFile,
    '-out',
    csr,
  ]);
  await writeFile(ext, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await run('openssl', [
    ...['x509', '-req', '-in', csr, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial'],
    ...['-days', '1', '-extfile', ext, '-out', certFile],
  ]);
  return { certFile, keyFile };
}

/**
 * Puts `from`'s files in place of `to`'s, each with a rename (atomic, as a Secret volume's
 * update is): the key first, then the certificate, as cert-manager writes them.
 */
export async function replaceCertificate(
  from: { certFile: string; keyFile: string },
  to: { certFile: string; keyFile: string },
): Promise<void> {
  await rename(from.keyFile, to.keyFile);
  await rename(from.certFile, to.certFile);
}
