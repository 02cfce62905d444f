import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** A JSON answer with its status, for the identity specs. */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** One JSON request to the emulator, with extra headers (Authorization, Impersonate-User). */
export async function request(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** `Authorization: Bearer <token>`. */
export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

const run = promisify(execFile);

/** Runs the real kubectl with the emulator's kubeconfig; never throws. */
export async function kubectl(
  kubeconfig: string,
  dir: string,
  ...args: string[]
): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(
      '/usr/bin/kubectl',
      ['--kubeconfig', kubeconfig, '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 20_000 },
    );
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; code?: number };
    return { stdout: failed.stdout ?? '', stderr: failed.stderr ?? '', code: failed.code ?? 1 };
  }
}
