import { readFile } from 'node:fs/promises';
import { unwatchFile, watchFile } from 'node:fs';
import { parse } from 'yaml';
import { driverInventorySchema } from '@slicekeeper/contracts';
import type { DriverInventory } from '@slicekeeper/contracts';

/**
 * Reads an inventory file: YAML or JSON (JSON is YAML) in the shape of `DriverInventory`.
 * Throws naming the file and every field that does not fit.
 */
export async function loadInventoryFile(path: string): Promise<DriverInventory> {
  const text = await readFile(path, 'utf8');
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new Error(
      `${path}: not YAML or JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const parsed = driverInventorySchema.safeParse(document);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (i) => `${i.path.join('.') || '(root)'}: ${i.message}`,
    );
    throw new Error(`${path}: not an inventory: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/**
 * Calls `onChange` whenever the file's modification time or size changes. Polls (every
 * `intervalMs`, default 500) rather than using inotify, so that editors that replace the file
 * and ConfigMap volumes that swap a symlink are both noticed. Returns a function that stops.
 */
export function watchInventoryFile(
  path: string,
  onChange: () => void,
  intervalMs = 500,
): () => void {
  const listener = (
    current: { mtimeMs: number; size: number },
    previous: { mtimeMs: number; size: number },
  ) => {
    if (current.mtimeMs !== previous.mtimeMs || current.size !== previous.size) onChange();
  };
  watchFile(path, { interval: intervalMs, persistent: false }, listener);
  return () => {
    unwatchFile(path, listener);
  };
}
