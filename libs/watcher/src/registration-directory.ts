import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** A registration directory as discovery sees it; a fake one in tests. */
export interface SocketDirectory {
  /** The directory's absolute path, for logs. */
  readonly path: string;
  /** Creates the directory when it is not there (as kubelet creates `plugins_registry`). */
  prepare(): Promise<void>;
  /**
   * The entries that may be plugin sockets, by absolute path, each with an identity that changes
   * when the entry is replaced (a driver that restarts makes a new socket).
   */
  list(): Promise<Map<string, string>>;
  /**
   * Calls `onChange` on any change in the directory (a burst of calls for one change is
   * debounced by the caller); `onError` when the watch itself failed and ended.
   */
  watch(onChange: () => void, onError: (error: Error) => void): { close(): void };
}

/**
 * The registration directory on disk, as kubelet's plugin watcher reads `plugins_registry`:
 * sockets and symlinks (a symlink is followed by the endpoint policy, which refuses one that
 * leads out of the allowed directories), not files whose name starts with a dot. Unlike kubelet
 * it does not descend into subdirectories: drivers put their registration socket at the top.
 */
export function socketDirectory(path: string): SocketDirectory {
  return {
    path,
    prepare: async () => {
      await mkdir(path, { recursive: true });
    },
    list: async () => {
      const found = new Map<string, string>();
      let entries;
      try {
        entries = await readdir(path, { withFileTypes: true });
      } catch (error) {
        // A directory removed under the watcher holds no sockets; it is created again at start.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return found;
        throw error;
      }
      await Promise.all(
        entries
          .filter((e) => !e.name.startsWith('.') && (e.isSocket() || e.isSymbolicLink()))
          .map(async (entry) => {
            const file = join(path, entry.name);
            try {
              // The entry's own inode and change time: a socket bound again, or a symlink made
              // again, is a new one.
              const stats = await lstat(file, { bigint: true });
              found.set(file, `${stats.ino}:${stats.ctimeNs}`);
            } catch {
              // Gone between readdir and lstat: not there.
            }
          }),
      );
      return found;
    },
    watch: (onChange, onError) => {
      const watcher: FSWatcher = watch(path, { persistent: false }, () => {
        onChange();
      });
      watcher.on('error', (error) => {
        watcher.close();
        onError(error);
      });
      return watcher;
    },
  };
}
