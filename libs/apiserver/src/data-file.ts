import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import type { StoreSnapshot } from './object-store';
import type { JsonObject } from './object-schema';

/**
 * The emulator's data file: what it stored when it closed, so that it can start again (as the
 * same or another release) on the same objects, as kube-apiserver does on etcd.
 */

const FORMAT = 'kube-emulator-data/v1';

const dataFileSchema = z.strictObject({
  format: z.literal(FORMAT),
  /** The release that wrote the file; informational. */
  release: z.string().optional(),
  resourceVersion: z.string().regex(/^[1-9][0-9]*$/, 'must be a positive integer'),
  objects: z.record(
    z.string(),
    z.array(z.record(z.string(), z.unknown()).transform((o) => o as JsonObject)),
  ),
});

/**
 * Reads a data file. @returns undefined when there is no file
 * @throws Error naming the file when it cannot be read or does not parse
 */
export async function readDataFile(path: string): Promise<StoreSnapshot | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`kube emulator data file ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`kube emulator data file ${path} is not JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const result = dataFileSchema.safeParse(parsed);
  if (!result.success) {
    throw new Error(
      `kube emulator data file ${path} is not an emulator data file: ${z.prettifyError(result.error)}`,
    );
  }
  return { resourceVersion: Number(result.data.resourceVersion), objects: result.data.objects };
}

/** Writes a data file atomically: a temporary file beside it, then a rename. */
export async function writeDataFile(
  path: string,
  snapshot: StoreSnapshot,
  release: string,
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const body = JSON.stringify({
    format: FORMAT,
    release,
    resourceVersion: String(snapshot.resourceVersion),
    objects: snapshot.objects,
  });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, body, { mode: 0o600 });
  await rename(temp, path);
}
