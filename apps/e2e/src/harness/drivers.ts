import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DriverInventory } from '@slicekeeper/contracts';
import { DriverServer } from '@slicekeeper/driver-kit';
import type { LogEntry, SupervisedProcess } from '@slicekeeper/local-stack';
import { RegistrationClient } from '@slicekeeper/registration-client';

interface DriverOptions {
  node: string;
  driver: string;
  inventory: DriverInventory;
  apiUrl: string;
  /** The node's registration token. */
  token: string;
}

/** How long a registration that failed retryably (e.g. a Redis Cluster client still connecting: 503) is tried again, ms. */
const REGISTER_RETRY_MS = 10_000;

/**
 * POST /v1/plugins with the node's token through the drivers' registration client, retrying as
 * the example driver and kubelet's registrar do.
 */
async function register(options: DriverOptions, endpoint: string): Promise<void> {
  const client = new RegistrationClient({
    baseUrl: options.apiUrl,
    token: options.token,
    timeoutMs: 10_000,
  });
  await client.registerRetrying(
    { node: options.node, driver: options.driver, endpoint },
    REGISTER_RETRY_MS,
  );
}

/**
 * The example driver as its own process: it serves the inventory file it is given and registers
 * itself with the API; a changed file is written and announced with SIGHUP.
 */
export class ExampleDriverProcess {
  private process: SupervisedProcess | undefined;
  private readonly inventoryFile: string;
  private readonly tokenFile: string;
  private readonly endpoint: string;
  private filesWritten = false;

  constructor(
    private readonly options: DriverOptions & {
      stateDir: string;
      spawn: (name: string, env: Record<string, string>) => SupervisedProcess;
    },
  ) {
    const dir = join(options.stateDir, 'drivers', `${options.node}-${options.driver}`);
    this.inventoryFile = join(dir, 'inventory.json');
    this.tokenFile = join(dir, 'token');
    this.endpoint = `unix://${join(options.stateDir, 'sockets', options.node, `${options.driver}.sock`)}`;
  }

  get name(): string {
    return `example-driver-${this.options.node}-${this.options.driver}`;
  }

  /** The running process's id (a restart gives it another). */
  get pid(): number | undefined {
    return this.process?.running === true ? this.process.pid : undefined;
  }

  /** Starts the process (again) and waits until it has registered. */
  async start(): Promise<void> {
    if (this.process?.running === true) throw new Error(`${this.name} is already running`);
    await mkdir(join(this.inventoryFile, '..'), { recursive: true });
    if (!this.filesWritten) {
      await writeFile(this.inventoryFile, JSON.stringify(this.options.inventory));
      await writeFile(this.tokenFile, `${this.options.token}\n`, { mode: 0o600 });
      this.filesWritten = true;
    }
    const child = this.options.spawn(this.name, {
      DRIVER_NAME: this.options.driver,
      NODE_NAME: this.options.node,
      ENDPOINT: this.endpoint,
      INVENTORY_FILE: this.inventoryFile,
      REGISTRATION_API_URL: this.options.apiUrl,
      REGISTRATION_TOKEN_FILE: this.tokenFile,
      LOG_LEVEL: 'info',
    });
    this.process = child;
    await child.waitForLog((e) => e.msg === 'registered', 'registered', 60_000);
  }

  /** Writes a new inventory file and has the driver publish it at once (SIGHUP). */
  async publish(inventory: DriverInventory): Promise<void> {
    await writeFile(this.inventoryFile, JSON.stringify(inventory));
    this.running().signal('SIGHUP');
  }

  /** The first log entry of the running driver that `match` accepts (one already seen counts). */
  waitForLog(match: (entry: LogEntry) => boolean, what: string): Promise<LogEntry> {
    return this.running().waitForLog(match, what);
  }

  /** Kills the driver as a crash would: no deregistration; its socket stays behind. */
  async kill(): Promise<void> {
    await this.process?.kill();
  }

  /** Stops the driver gracefully: it deregisters itself. */
  async close(): Promise<void> {
    await this.process?.stop(5000);
  }

  private running(): SupervisedProcess {
    if (this.process?.running !== true) throw new Error(`${this.name} is not running`);
    return this.process;
  }
}

/**
 * A driver served from the test's own process with the driver kit (what a DRA driver author
 * embeds), registered through the API with the node's token. Publishing is a function call, so
 * a scenario can send a burst of inventories and know exactly when each left.
 */
export class InProcessDriver {
  private server: DriverServer | undefined;
  private readonly endpoint: string;
  private inventory: DriverInventory;

  constructor(private readonly options: DriverOptions & { socketDir: string }) {
    this.inventory = options.inventory;
    this.endpoint = `unix://${join(options.socketDir, options.node, `${options.driver}.sock`)}`;
  }

  get node(): string {
    return this.options.node;
  }

  get driver(): string {
    return this.options.driver;
  }

  /** Serves the inventory (again, after `stop`) and registers. */
  async start(): Promise<void> {
    await mkdir(join(this.options.socketDir, this.options.node), { recursive: true });
    const server = new DriverServer({
      driverName: this.options.driver,
      endpoint: this.endpoint,
      inventory: this.inventory,
    });
    this.server = server;
    await server.start();
    await this.register();
  }

  /** Registers the plugin again (e.g. after Redis lost the registrations). */
  async register(): Promise<void> {
    await register(this.options, this.endpoint);
  }

  /** Sends a complete inventory on every open stream (and to streams opened later). */
  publish(inventory: DriverInventory): void {
    if (this.server === undefined) throw new Error(`${this.options.driver} is not serving`);
    this.inventory = inventory;
    this.server.publish(inventory);
  }

  /** Stops serving at once, without deregistering (the streams fail). */
  async stop(): Promise<void> {
    await this.server?.close();
    this.server = undefined;
  }

  close(): Promise<void> {
    return this.stop();
  }
}
