import { KubeApiError } from './kube-transport';
import { ManualClock } from '@slicekeeper/time/testing';
import type { KubeRequest, KubeResponse, KubeStream } from './kube-transport';
import { Reflector } from './reflector';
import type { ReflectorOptions, ReflectorTransport } from './reflector';

interface Item {
  name: string;
  rv: string;
}

/** What the fake API server does with the next watch: send lines, then end, fail or hang. */
interface WatchScript {
  lines: string[];
  then: 'end' | 'hang' | Error;
}

/** A scripted API server: list answers and watch streams, in order; records every request. */
class FakeApi implements ReflectorTransport {
  readonly requests: string[] = [];
  readonly lists: (KubeResponse | Error)[] = [];
  readonly watches: (WatchScript | Error)[] = [];

  request(request: KubeRequest): Promise<KubeResponse> {
    this.requests.push(request.path);
    const next = this.lists.shift();
    if (next === undefined) return new Promise(() => undefined);
    return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
  }

  stream(request: KubeRequest): Promise<KubeStream> {
    this.requests.push(request.path);
    const next = this.watches.shift();
    if (next === undefined) return hang(request.signal);
    if (next instanceof Error) return Promise.reject(next);
    return Promise.resolve({ status: 200, lines: play(next, request.signal) });
  }
}

function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    signal.addEventListener('abort', () => {
      reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
    });
  });
}

async function* play(script: WatchScript, signal: AbortSignal): AsyncGenerator<string> {
  for (const line of script.lines) yield line;
  if (script.then === 'hang') await hang(signal);
  if (script.then instanceof Error) throw script.then;
}

function list(items: Item[], rv: string, continueToken?: string): KubeResponse {
  return {
    status: 200,
    body: JSON.stringify({
      metadata: {
        resourceVersion: rv,
        ...(continueToken === undefined ? {} : { continue: continueToken }),
      },
      items: items.map((item) => ({ metadata: { name: item.name, resourceVersion: item.rv } })),
    }),
  };
}

function event(type: string, name: string, rv: string): string {
  return JSON.stringify({ type, object: { metadata: { name, resourceVersion: rv } } });
}

function bookmark(rv: string): string {
  return JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: rv } } });
}

const EXPIRED = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'too old resource version: 5 (9)',
  reason: 'Expired',
  code: 410,
};

function query(path: string): Record<string, string> {
  return Object.fromEntries(new URL(path, 'http://x').searchParams);
}

let api: FakeApi;
let clock: ManualClock;
let log: { level: string; msg: string; fields: object }[];
let seen: string[];
let reflector: Reflector<Item, string>;

function start(options: Partial<ReflectorOptions<Item, string>> = {}): Promise<void> {
  reflector = new Reflector<Item, string>({
    transport: api,
    path: '/apis/example/v1/things',
    resource: 'things',
    kind: 'Things',
    labelSelector: 'managed=yes',
    decode: (json) => {
      const metadata = (json as { metadata?: { name?: unknown; resourceVersion?: unknown } })
        .metadata;
      if (typeof metadata?.name !== 'string') throw new Error('a thing without a name');
      return { name: metadata.name, rv: String(metadata.resourceVersion) };
    },
    onReplace: (items, rv, initial) => {
      const text = `${initial ? 'list' : 'relist'}@${rv}:${items.map((i) => i.name).join(',')}`;
      seen.push(text);
      return text;
    },
    onEvent: (type, item, rv) => seen.push(`${type} ${item.name}@${rv}`),
    onProgress: (rv) => seen.push(`progress@${rv}`),
    logger: {
      debug: (fields: object, msg: string) => log.push({ level: 'debug', msg, fields }),
      info: (fields: object, msg: string) => log.push({ level: 'info', msg, fields }),
      warn: (fields: object, msg: string) => log.push({ level: 'warn', msg, fields }),
    } as unknown as ReflectorOptions<Item, string>['logger'],
    clock,
    random: () => 0,
    backoff: { initialMs: 1000, maxMs: 4000, jitter: 0.5 },
    ...options,
  });
  return reflector.start();
}

/** Lets the reflector act on what the fake server did, firing due timers on the way. */
async function settle(ms = 0): Promise<void> {
  await clock.advance(ms);
}

beforeEach(() => {
  api = new FakeApi();
  clock = new ManualClock();
  log = [];
  seen = [];
});

afterEach(async () => {
  await reflector.close();
});

describe('Reflector', () => {
  it('lists page by page, then watches from the list version with bookmarks', async () => {
    api.lists.push(
      list([{ name: 'a', rv: '3' }], '9', 'next'),
      list([{ name: 'b', rv: '4' }], '9'),
    );
    api.watches.push({ lines: [event('ADDED', 'c', '10')], then: 'hang' });
    await start({ listPageSize: 1 });
    await settle();

    expect(seen).toEqual(['list@9:a,b', 'ADDED c@10']);
    expect(reflector.synced).toBe(true);
    expect(query(api.requests[0] ?? '')).toEqual({ labelSelector: 'managed=yes', limit: '1' });
    expect(query(api.requests[1] ?? '')).toEqual({
      labelSelector: 'managed=yes',
      limit: '1',
      continue: 'next',
    });
    expect(query(api.requests[2] ?? '')).toEqual({
      watch: 'true',
      labelSelector: 'managed=yes',
      resourceVersion: '9',
      allowWatchBookmarks: 'true',
      timeoutSeconds: '300',
    });
  });

  it('resumes an ended watch from the last version seen, a bookmark included, without a relist', async () => {
    api.lists.push(list([], '9'));
    api.watches.push(
      { lines: [event('ADDED', 'a', '10'), bookmark('15')], then: 'end' },
      { lines: [event('MODIFIED', 'a', '16')], then: new Error('socket hang up') },
      { lines: [], then: 'hang' },
    );
    await start();
    await settle();
    // The first watch was healthy: resumed at once. The second broke: resumed after a backoff.
    expect(clock.pending()).toEqual([1000]);
    await settle(1000);

    expect(seen).toEqual(['list@9:', 'ADDED a@10', 'progress@15', 'MODIFIED a@16']);
    const watches = api.requests.filter((path) => query(path).watch === 'true');
    expect(watches.map((path) => query(path).resourceVersion)).toEqual(['9', '15', '16']);
    expect(api.requests).toHaveLength(4);
    expect(log).toContainEqual(
      expect.objectContaining({ level: 'warn', msg: 'watch failed, resuming' }),
    );
  });

  it('lists again when the watch reports 410 Expired as an ERROR event', async () => {
    api.lists.push(list([{ name: 'a', rv: '3' }], '5'), list([{ name: 'b', rv: '12' }], '12'));
    api.watches.push(
      {
        lines: [event('ADDED', 'x', '6'), JSON.stringify({ type: 'ERROR', object: EXPIRED })],
        then: 'hang',
      },
      { lines: [], then: 'hang' },
    );
    await start();
    await settle();

    expect(seen).toEqual(['list@5:a', 'ADDED x@6', 'relist@12:b']);
    expect(query(api.requests.at(-1) ?? '').resourceVersion).toBe('12');
    expect(log).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'watch expired, listing again' }),
    );
  });

  it('lists again when the watch request is answered 410 Gone', async () => {
    api.lists.push(list([], '5'), list([], '12'));
    api.watches.push(new KubeApiError(410, JSON.stringify(EXPIRED), {}), {
      lines: [],
      then: 'hang',
    });
    await start();
    await settle();
    // The failed watch delivered nothing: the relist waits a backoff.
    expect(seen).toEqual(['list@5:']);
    await settle(1000);
    expect(seen).toEqual(['list@5:', 'relist@12:']);
  });

  it('resumes from the last version after an ERROR event other than 410', async () => {
    const internal = {
      ...EXPIRED,
      message: 'etcd unavailable',
      reason: 'InternalError',
      code: 500,
    };
    api.lists.push(list([], '5'));
    api.watches.push(
      {
        lines: [event('ADDED', 'a', '6'), JSON.stringify({ type: 'ERROR', object: internal })],
        then: 'hang',
      },
      { lines: [], then: 'hang' },
    );
    await start();
    await settle(1000);
    const watches = api.requests.filter((path) => query(path).watch === 'true');
    expect(watches.map((path) => query(path).resourceVersion)).toEqual(['5', '6']);
    expect(seen).toEqual(['list@5:', 'ADDED a@6']);
  });

  it('skips and logs watch events that are not valid objects, and goes on', async () => {
    api.lists.push(list([{ name: 'a', rv: '3' }, { nameless: true } as unknown as Item], '5'));
    api.watches.push({
      lines: [
        'not json',
        JSON.stringify({ type: 'ADDED' }),
        JSON.stringify({ type: 'ADDED', object: { metadata: { resourceVersion: '6' } } }),
        JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b' } } }),
        JSON.stringify({ type: 'SURPRISE', object: {} }),
        event('ADDED', 'c', '7'),
      ],
      then: 'hang',
    });
    await start();
    await settle();

    expect(seen).toEqual(['list@5:a', 'ADDED c@7']);
    expect(log.filter((entry) => entry.level === 'warn').map((entry) => entry.msg)).toEqual([
      'skipped invalid list item',
      'skipped unreadable watch event',
      'skipped malformed watch event',
      'skipped invalid ADDED event',
      'skipped watch event without resourceVersion',
      'skipped watch event of unknown type',
    ]);
  });

  it('retries a failing list with jittered, capped backoff until it succeeds', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    api.lists.push(refused, refused, refused, refused, list([], '5'));
    api.watches.push({ lines: [], then: 'hang' });
    let synced = false;
    const started = start({ random: () => 0.5 }).then(() => {
      synced = true;
    });
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      await settle();
      delays.push(clock.pending()[0] ?? -1);
      await settle(delays.at(-1));
    }
    await started;
    // 1 s doubling to the 4 s cap, each less a quarter (random 0.5 × jitter 0.5).
    expect(delays).toEqual([750, 1500, 3000, 3000]);
    expect(synced).toBe(true);
  });

  it('relist() ends the watch, lists from scratch and resolves with the result', async () => {
    api.lists.push(list([{ name: 'a', rv: '3' }], '5'), list([{ name: 'b', rv: '8' }], '9'));
    api.watches.push({ lines: [], then: 'hang' }, { lines: [], then: 'hang' });
    await start();
    await settle();
    await expect(reflector.relist()).resolves.toBe('relist@9:b');
    await settle();
    expect(query(api.requests.at(-1) ?? '').resourceVersion).toBe('9');
  });

  it('relist() before start() is refused', async () => {
    reflector = new Reflector<Item, string>({
      transport: api,
      path: '/things',
      resource: 'things',
      kind: 'Things',
      decode: () => ({ name: 'x', rv: '1' }),
      onReplace: () => 'x',
      onEvent: () => undefined,
      logger: {
        debug: () => undefined,
        info: () => undefined,
        warn: () => undefined,
      } as unknown as ReflectorOptions<Item, string>['logger'],
      clock,
    });
    await expect(reflector.relist()).rejects.toThrow('Things: not started');
  });

  it('close() ends the watch; start() and relist() reject afterwards', async () => {
    api.lists.push(list([], '5'));
    api.watches.push({ lines: [], then: 'hang' });
    await start();
    await settle();
    await reflector.close();
    await expect(reflector.relist()).rejects.toThrow('Things: closed');
    expect(clock.pending()).toEqual([]);
  });
});
