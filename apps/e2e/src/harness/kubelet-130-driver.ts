import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { DRA_PLUGIN_TYPE, KUBELET_130_PLUGIN_VERSION } from '@slicekeeper/contracts';
import { kubeletDra, registration } from '@slicekeeper/proto';
import type { System } from './system';

type Resources = kubeletDra.NodeListAndWatchResourcesResponse;
type ResourcesCall = ServerWritableStream<kubeletDra.NodeListAndWatchResourcesRequest, Resources>;

export interface Kubelet130DriverOptions {
  node: string;
  driver: string;
  /** The first message of every NodeListAndWatchResources stream. */
  resources: Resources;
  /**
   * Puts the registration socket into this directory (`<driver>-reg.sock`), as kubelet 1.30's
   * helper puts it into `plugins_registry`, and makes no registration call: the node-mode
   * watcher's discovery finds it. @defaultValue registered through the API, socket beside the
   * service socket
   */
  registrationDirectory?: string;
}

/**
 * A DRA driver as kubelet 1.30's kubeletplugin helper runs it, served from the test's process
 * with @grpc/grpc-js straight from the generated protos (not driver-kit): a registration socket
 * whose GetInfo answers `DRAPlugin`, the driver name, the service socket and
 * `supported_versions: ["1.0.0"]`, and a service socket that serves `v1alpha3.Node`. It is
 * registered through the API with the registration socket, as kubelet's registrar is handed it.
 */
export class Kubelet130Driver {
  private readonly streams = new Set<ResourcesCall>();
  private resources: Resources;
  /** The statuses NotifyRegistrationStatus told the driver. */
  readonly told: registration.RegistrationStatus[] = [];

  private constructor(
    private readonly options: Kubelet130DriverOptions,
    private readonly registrationServer: Server,
    private readonly serviceServer: Server,
    private readonly sockets: readonly string[],
  ) {
    this.resources = options.resources;
  }

  /** Serves both sockets under the system's socket directory and registers. */
  static async start(system: System, options: Kubelet130DriverOptions): Promise<Kubelet130Driver> {
    const dir = join(system.stateDir, 'sockets', options.node);
    await mkdir(dir, { recursive: true });
    const registrationSocket = join(
      options.registrationDirectory ?? dir,
      `${options.driver}-reg.sock`,
    );
    if (options.registrationDirectory !== undefined) {
      await mkdir(options.registrationDirectory, { recursive: true });
    }
    const serviceSocket = join(dir, `${options.driver}-130.sock`);

    const registrationServer = new Server();
    const serviceServer = new Server();
    const driver = new Kubelet130Driver(options, registrationServer, serviceServer, [
      registrationSocket,
      serviceSocket,
    ]);
    const registrationService: registration.RegistrationServer = {
      getInfo: (_call, callback) => {
        callback(null, {
          type: DRA_PLUGIN_TYPE,
          name: options.driver,
          // kubelet 1.30's helper names the service socket as a bare path.
          endpoint: serviceSocket,
          supportedVersions: [KUBELET_130_PLUGIN_VERSION],
        });
      },
      notifyRegistrationStatus: (call, callback) => {
        driver.told.push(call.request);
        callback(null, {});
      },
    };
    registrationServer.addService(registration.RegistrationService, registrationService);
    serviceServer.addService(kubeletDra.NodeService, {
      nodeListAndWatchResources: (call: ResourcesCall) => {
        driver.streams.add(call);
        call.on('cancelled', () => driver.streams.delete(call));
        call.write(driver.resources);
      },
    });
    // The service socket first: a registration socket that appears is dialled at once.
    await bind(serviceServer, `unix://${serviceSocket}`);
    await bind(registrationServer, `unix://${registrationSocket}`);
    if (options.registrationDirectory !== undefined) return driver;

    const response = await fetch(new URL('/v1/plugins', system.apiUrl), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${system.nodeToken(options.node)}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        node: options.node,
        driver: options.driver,
        endpoint: `unix://${registrationSocket}`,
      }),
      signal: AbortSignal.timeout(10_000),
    });
    if (response.status !== 201 && response.status !== 200) {
      await driver.close();
      throw new Error(
        `registering ${options.node}/${options.driver}: ${response.status} ${await response.text()}`,
      );
    }
    return driver;
  }

  /** Sends a complete message on every open stream (and to streams opened later). */
  publish(resources: Resources): void {
    this.resources = resources;
    for (const call of this.streams) call.write(resources);
  }

  /** Stops serving at once, without deregistering, and removes the sockets. */
  async close(): Promise<void> {
    for (const call of this.streams) call.end();
    this.streams.clear();
    this.registrationServer.forceShutdown();
    this.serviceServer.forceShutdown();
    await Promise.all(this.sockets.map((socket) => rm(socket, { force: true })));
  }

  get node(): string {
    return this.options.node;
  }

  get driver(): string {
    return this.options.driver;
  }
}

function bind(server: Server, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, ServerCredentials.createInsecure(), (error) => {
      if (error === null) resolve();
      else reject(error);
    });
  });
}
