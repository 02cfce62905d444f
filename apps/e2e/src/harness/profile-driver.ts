import { createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverInventory } from '@slicekeeper/contracts';
import { SupervisedProcess, appCommand, inheritedEnv, repoRoot } from '@slicekeeper/local-stack';
import type { LogEntry } from '@slicekeeper/local-stack';
import type { PluginStatus, System } from './system';

/** What the example driver logs of each NotifyPublishStatus it gets (`publish feedback`). */
export interface LoggedFeedback {
  node: string;
  outcome: string;
  snapshotGeneration: number;
  problems: unknown[];
  droppedFields: string[];
  slices: string[];
}

export interface ProfileDriverOptions {
  /** Names the log file, `reports/e2e/<run>/<driver>.log`. */
  run: string;
  /** The example driver's PROFILE. */
  profile: string;
  driver: string;
  /** The key's node; `''` is the cluster-scoped key, registered with the admin token. */
  node: string;
  /** Serves this inventory (INVENTORY_FILE) instead of the profile's file. */
  inventory?: DriverInventory;
}

/**
 * The example driver as its own process, started with a PROFILE as a user starts it (or an
 * inventory file), registered through the API; it keeps every publish feedback it logs, which
 * is what the driver was told of its inventory (NotifyPublishStatus).
 */
export class ProfileDriver {
  readonly feedback: LoggedFeedback[] = [];
  private process: SupervisedProcess | undefined;
  private log: WriteStream | undefined;
  private readonly dir: string;

  constructor(
    private readonly system: System,
    private readonly options: ProfileDriverOptions,
  ) {
    this.dir = join(system.stateDir, 'profile-drivers', options.driver);
  }

  get name(): string {
    return `example-driver-${this.options.driver}`;
  }

  /** Starts the driver and waits until it has registered. */
  async start(): Promise<void> {
    const o = this.options;
    await mkdir(this.dir, { recursive: true });
    const tokenFile = join(this.dir, 'token');
    const token = o.node === '' ? this.system.tokens.admin : this.system.nodeToken(o.node);
    await writeFile(tokenFile, `${token}\n`, { mode: 0o600 });
    const inventoryFile = join(this.dir, 'inventory.json');
    if (o.inventory !== undefined) await writeFile(inventoryFile, JSON.stringify(o.inventory));
    const logDir = join(repoRoot, 'reports', 'e2e', o.run);
    await mkdir(logDir, { recursive: true });
    const log = createWriteStream(join(logDir, `${this.name}.log`), { flags: 'a' });
    this.log = log;
    const socketDir = join(this.system.stateDir, 'sockets', o.node === '' ? 'cluster' : o.node);
    this.process = new SupervisedProcess({
      name: this.name,
      ...appCommand('example-driver'),
      env: {
        ...inheritedEnv(process.env, ['PATH', 'HOME', 'TMPDIR', 'LANG', 'LC_ALL', 'TZ']),
        DRIVER_NAME: o.driver,
        NODE_NAME: o.node,
        PROFILE: o.profile,
        ...(o.inventory === undefined ? {} : { INVENTORY_FILE: inventoryFile }),
        ENDPOINT: `unix://${join(socketDir, `${o.driver}.sock`)}`,
        REGISTRATION_API_URL: this.system.apiUrl,
        REGISTRATION_TOKEN_FILE: tokenFile,
        LOG_LEVEL: 'info',
      },
      ownProcessGroup: true,
      onLine: (line) => {
        log.write(`${line}\n`);
        this.keepFeedback(line);
      },
    });
    await this.process.waitForLog((e: LogEntry) => e.msg === 'registered', 'registered', 60_000);
  }

  /** Serves a new inventory file at once (SIGHUP); only for a driver started with one. */
  async publish(inventory: DriverInventory): Promise<void> {
    await writeFile(join(this.dir, 'inventory.json'), JSON.stringify(inventory));
    this.process?.signal('SIGHUP');
  }

  /** The key's status as the registration API lists it (the cluster-scoped key too). */
  async status(): Promise<PluginStatus | undefined> {
    const url = new URL('/v1/plugins', this.system.apiUrl);
    url.searchParams.set('driver', this.options.driver);
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${this.system.tokens.admin}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (response.status !== 200) throw new Error(`GET ${url.pathname}: ${response.status}`);
    const list = (await response.json()) as { items: (PluginStatus & { node: string })[] };
    return list.items.find((item) => item.node === this.options.node);
  }

  /** Stops the driver gracefully (it deregisters). */
  async close(): Promise<void> {
    await this.process?.stop(5000);
    await new Promise((resolve) => {
      if (this.log === undefined) resolve(undefined);
      else this.log.end(resolve);
    });
  }

  private keepFeedback(line: string): void {
    if (!line.startsWith('{') || !line.includes('"msg":"publish feedback"')) return;
    this.feedback.push(JSON.parse(line) as LoggedFeedback);
  }
}
