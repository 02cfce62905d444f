import { failureStatus, resourceSlice, SLICES } from './emulator-objects.test-helper';
import { EmulatorUnderTest, readWatch } from './emulator-requests.test-helper';
import type { Json } from './emulator-requests.test-helper';

/**
 * Watches and lists as kube-apiserver 1.34's watch cache serves them.
 *
 * - Bookmarks only for `allowWatchBookmarks=true` (`staging/src/k8s.io/apiserver/pkg/storage/
 *   cacher/cache_watcher.go`, `cacher.go`). A watch from "" or "0" that names neither
 *   `sendInitialEvents` nor `resourceVersionMatch` is turned into a watch-list by
 *   `SetListOptionsDefaults` (`apimachinery/pkg/apis/meta/internalversion/defaults.go`, WatchList
 *   on): its initial ADDED events end with one BOOKMARK annotated
 *   `k8s.io/initial-events-end: "true"` — when bookmarks are allowed (`isListWatchRequest`).
 *   `sendInitialEvents=false` starts at the current state without initial events; a watch from a
 *   list's resourceVersion replays and gets no annotated bookmark.
 * - An object that stops matching a selector arrives as DELETED carrying its previous content
 *   (the labels it matched with) at the event's resourceVersion (`convertToWatchEvent`,
 *   `!curObjPasses && oldObjPasses`).
 * - `as=PartialObjectMetadata[List]` answers metadata only, with Content-Type
 *   `application/json` (`handlers/response.go` `transformResponseObject`: the negotiated
 *   serializer's media type).
 * - A malformed resourceVersion is the versioner's `InvalidError`
 *   (`storage/api_object_versioner.go`): returned as it is by the watch cache's get, list and
 *   watch (`cacher/delegator.go`, a 500 without a reason), wrapped in a 400 "invalid resource
 *   version: …" by a list that goes to etcd (a limit with a version, or Exact).
 */

const kube = new EmulatorUnderTest();
const call = kube.exchange.bind(kube);

beforeEach(() => kube.start());
afterEach(() => kube.close());

function slice(name: string, tier = 'gold'): Json {
  return resourceSlice(name, { metadata: { labels: { tier } } });
}

async function create(name: string, tier = 'gold'): Promise<Json> {
  const res = await call('POST', SLICES, slice(name, tier));
  expect(res.status).toBe(201);
  return res.body;
}

function metaOf(object: unknown): Json {
  return (object as Json).metadata as Json;
}

function nameOf(event: Json): string {
  return metaOf(event.object).name as string;
}

/**
 * Opens a watch, runs `afterOpen` once the server answered, and reads events until `until`
 * accepts one (that one included), then hangs up.
 */
function watchUntil(
  query: string,
  afterOpen: () => Promise<unknown>,
  until: (event: Json) => boolean,
): Promise<Json[]> {
  return readWatch(`${kube.url}${SLICES}?watch=true&${query}`, {}, until, async (res) => {
    expect(res.status).toBe(200);
    await afterOpen();
  });
}

const addedName = (name: string) => (event: Json) =>
  event.type === 'ADDED' && nameOf(event) === name;

function shape(events: Json[]): string[] {
  return events.map((e) =>
    e.type === 'BOOKMARK'
      ? `BOOKMARK ${JSON.stringify(metaOf(e.object).annotations ?? {})}`
      : `${e.type as string} ${nameOf(e)}`,
  );
}

const END = 'BOOKMARK {"k8s.io/initial-events-end":"true"}';

describe('bookmarks', () => {
  beforeEach(async () => {
    await create('a');
  });

  it('sends none to a watch that did not allow them, not even after the initial events', async () => {
    const events = await watchUntil('', () => create('z'), addedName('z'));
    expect(shape(events)).toEqual(['ADDED a', 'ADDED z']);
  });

  it.each([
    ['no resourceVersion', 'allowWatchBookmarks=true'],
    ['resourceVersion 0', 'allowWatchBookmarks=true&resourceVersion=0'],
    [
      'sendInitialEvents=true',
      'allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan',
    ],
  ])(
    'ends the initial events of a watch from %s with the annotated bookmark',
    async (_what, query) => {
      const events = await watchUntil(query, () => create('z'), addedName('z'));
      expect(shape(events)).toEqual(['ADDED a', END, 'ADDED z']);
      const bookmark = events[1]?.object as Json;
      expect(bookmark).toMatchObject({ kind: 'ResourceSlice', apiVersion: 'resource.k8s.io/v1' });
      const list = await call('GET', SLICES);
      expect(Number(metaOf(bookmark).resourceVersion)).toBeGreaterThanOrEqual(
        Number(metaOf(events[0]?.object).resourceVersion),
      );
      expect(Number(metaOf(bookmark).resourceVersion)).toBeLessThan(
        Number(metaOf(list.body).resourceVersion),
      );
    },
  );

  it('sends the initial events without a bookmark to a watch-list that did not allow them', async () => {
    const events = await watchUntil(
      'sendInitialEvents=true&resourceVersionMatch=NotOlderThan',
      () => create('z'),
      addedName('z'),
    );
    expect(shape(events)).toEqual(['ADDED a', 'ADDED z']);
  });

  it('starts at the current state without initial events for sendInitialEvents=false', async () => {
    const events = await watchUntil(
      'allowWatchBookmarks=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan',
      () => create('z'),
      addedName('z'),
    );
    expect(shape(events)).toEqual(['ADDED z']);
  });

  it('gives a watch from a list resourceVersion its changes and no annotated bookmark', async () => {
    const listed = await call('GET', SLICES);
    const rv = metaOf(listed.body).resourceVersion as string;
    await create('b');
    const events = await watchUntil(
      `allowWatchBookmarks=true&resourceVersion=${rv}`,
      () => create('z'),
      addedName('z'),
    );
    expect(shape(events)).toEqual(['ADDED b', 'ADDED z']);
  });
});

describe('selectors', () => {
  it('sends DELETED with the labels the object matched with, at the change’s resourceVersion', async () => {
    await create('a');
    const events = await watchUntil(
      'labelSelector=tier%3Dgold',
      async () => {
        const patched = await call(
          'PATCH',
          `${SLICES}/a`,
          { metadata: { labels: { tier: 'silver' } } },
          'application/merge-patch+json',
        );
        expect(patched.status).toBe(200);
        return patched;
      },
      (event) => event.type === 'DELETED',
    );
    expect(shape(events)).toEqual(['ADDED a', 'DELETED a']);
    const live = await call('GET', `${SLICES}/a`);
    const gone = metaOf(events[1]?.object);
    expect(gone.labels).toEqual({ tier: 'gold' });
    expect(gone.resourceVersion).toBe(metaOf(live.body).resourceVersion);
  });

  it('sends ADDED when a set-based selector starts matching and DELETED when it stops', async () => {
    await create('a', 'bronze');
    const patchTier = (tier: string) =>
      call(
        'PATCH',
        `${SLICES}/a`,
        { metadata: { labels: { tier } } },
        'application/merge-patch+json',
      );
    const events = await watchUntil(
      'labelSelector=tier%20in%20(gold%2Csilver)',
      async () => {
        await patchTier('gold');
        await patchTier('silver');
        await patchTier('bronze');
      },
      (event) => event.type === 'DELETED',
    );
    expect(shape(events)).toEqual(['ADDED a', 'MODIFIED a', 'DELETED a']);
    expect(metaOf(events[2]?.object).labels).toEqual({ tier: 'silver' });
  });
});

describe('metadata-only reads', () => {
  it('lists PartialObjectMetadataList with Content-Type application/json', async () => {
    await create('a');
    const res = await fetch(`${kube.url}${SLICES}`, {
      headers: { Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as Json;
    expect(body).toMatchObject({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1' });
    const items = body.items as Json[];
    expect(items).toHaveLength(1);
    expect(Object.keys(items[0] ?? {})).toEqual(['kind', 'apiVersion', 'metadata']);
    expect(items[0]).toMatchObject({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { name: 'a', labels: { tier: 'gold' } },
    });
  });

  it('gets PartialObjectMetadata of one object', async () => {
    await create('a');
    const res = await fetch(`${kube.url}${SLICES}/a`, {
      headers: { Accept: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' },
    });
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as Json;
    expect(body).toMatchObject({ kind: 'PartialObjectMetadata', metadata: { name: 'a' } });
    expect(body).not.toHaveProperty('spec');
  });
});

describe('malformed and future resourceVersions', () => {
  const invalid = (value: string, reason = 'invalid syntax') =>
    `resourceVersion: Invalid value: "${value}": strconv.ParseUint: parsing "${value}": ${reason}`;

  it.each([
    ['a get', `${SLICES}/a?resourceVersion=abc`, 'abc'],
    ['a list from the watch cache', `${SLICES}?resourceVersion=-1`, '-1'],
    ['a watch', `${SLICES}?watch=true&resourceVersion=1x`, '1x'],
  ])(
    'fails %s with the versioner’s error as a 500 without a reason',
    async (_what, path, value) => {
      await create('a');
      const answer = await call('GET', path);
      expect(answer.status).toBe(500);
      expect(answer.body).toEqual(failureStatus(500, invalid(value)));
    },
  );

  it('wraps it in a 400 for a list that goes to etcd', async () => {
    const limited = await call('GET', `${SLICES}?resourceVersion=abc&limit=5`);
    expect(limited.status).toBe(400);
    expect(limited.body.message).toBe(`invalid resource version: ${invalid('abc')}`);
    const exact = await call(
      'GET',
      `${SLICES}?resourceVersion=99999999999999999999&resourceVersionMatch=Exact`,
    );
    expect(exact.body.message).toBe(
      `invalid resource version: ${invalid('99999999999999999999', 'value out of range')}`,
    );
  });

  it('answers a get from a future resourceVersion with 504 and Retry-After', async () => {
    await create('a');
    const answer = await call('GET', `${SLICES}/a?resourceVersion=999999`);
    expect(answer.status).toBe(504);
    expect(answer.headers.get('retry-after')).toBe('1');
    expect(answer.body.message).toMatch(
      /^Timeout: Too large resource version: 999999, current: \d+$/,
    );
    expect(answer.body).toMatchObject({
      reason: 'Timeout',
      details: {
        causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        retryAfterSeconds: 1,
      },
    });
  });
});
