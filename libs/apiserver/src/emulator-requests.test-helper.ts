import { startKubeEmulator } from './start-kube-emulator';
import type { KubeEmulator } from './kube-emulator';
import type { RunningKubeEmulator, StartKubeEmulatorOptions } from './start-kube-emulator';

/** A JSON object as the emulator answers it, for tests. */
export type Json = Record<string, unknown>;

/** The emulator's answer to one request, read as JSON. */
export interface EmulatorAnswer {
  status: number;
  body: Json;
}

/**
 * Sends one request to the emulator at `url` (a JSON body, or a string as it is) and reads the
 * answer as JSON.
 */
export async function callEmulator(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<EmulatorAnswer> {
  const { status, body: answered } = await exchangeWithEmulator(
    url,
    method,
    path,
    body,
    contentType,
  );
  return { status, body: answered };
}

/** As {@link callEmulator}, keeping the answer's headers (warnings, Retry-After, Content-Type). */
export async function exchangeWithEmulator(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<EmulatorAnswer & { headers: Headers }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { Accept: 'application/json', 'Content-Type': contentType },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Json, headers: res.headers };
}

/**
 * Reads a watch stream event by event until `until` accepts one (that one included), then hangs
 * up. `onOpen` runs once the server has answered the headers, i.e. once the watch is registered,
 * so a write it makes is seen by the watch.
 */
export async function readWatch(
  url: string,
  init: RequestInit,
  until: (event: Json, events: readonly Json[]) => boolean,
  onOpen: (res: Response) => Promise<unknown> = () => Promise.resolve(),
): Promise<Json[]> {
  const controller = new AbortController();
  const res = await fetch(url, { ...init, signal: controller.signal });
  const events: Json[] = [];
  let buffered = '';
  const decoder = new TextDecoder();
  try {
    await onOpen(res);
    if (res.body === null) return events;
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const event = JSON.parse(buffered.slice(0, newline)) as Json;
        buffered = buffered.slice(newline + 1);
        events.push(event);
        if (until(event, events)) return events;
      }
    }
  } finally {
    controller.abort();
  }
  return events;
}

/** Reads a watch stream until `count` events arrived, then hangs up. */
export function firstWatchEvents(url: string, init: RequestInit, count: number): Promise<Json[]> {
  return readWatch(url, init, (_event, events) => events.length >= count);
}

/**
 * The emulator a spec file's tests talk to. The spec owns the lifetime through its hooks
 * (`beforeEach(() => kube.start())`, `afterEach(() => kube.close())`, or the `All` pair), so the
 * setup stays visible where the tests are; everything else reads `url`, `emulator` and `call`.
 */
export class EmulatorUnderTest {
  #running: RunningKubeEmulator | undefined;

  /** @param defaults options for {@link start}; a free port unless told otherwise. */
  constructor(private readonly defaults: StartKubeEmulatorOptions = { port: 0 }) {}

  /** Starts a fresh emulator, with `options` when given (a temp kubeconfig path, a clock). */
  async start(options: StartKubeEmulatorOptions = this.defaults): Promise<void> {
    this.#running = await startKubeEmulator(options);
  }

  /** Stops the emulator the last {@link start} started. */
  async close(): Promise<void> {
    await this.#running?.close();
  }

  get running(): RunningKubeEmulator {
    if (this.#running === undefined) {
      throw new Error('the emulator is not started: call start() in a before hook');
    }
    return this.#running;
  }

  get url(): string {
    return this.running.url;
  }

  get emulator(): KubeEmulator {
    return this.running.emulator;
  }

  get kubeconfigPath(): string | undefined {
    return this.running.kubeconfigPath;
  }

  /** One request, read as JSON (see {@link callEmulator}). */
  call(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<EmulatorAnswer> {
    return callEmulator(this.url, method, path, body, contentType);
  }

  /** One request, read as JSON, with the answer's headers. */
  exchange(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<EmulatorAnswer & { headers: Headers }> {
    return exchangeWithEmulator(this.url, method, path, body, contentType);
  }

  /** Reads a watch of `path` (with its query) until `count` events arrived. */
  firstWatchEvents(path: string, count: number, init: RequestInit = {}): Promise<Json[]> {
    return firstWatchEvents(`${this.url}${path}`, init, count);
  }
}
