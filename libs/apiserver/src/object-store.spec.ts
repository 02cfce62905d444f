import { ObjectStore, objectKey } from './object-store';
import type { ResourceIndexing } from './object-store';

const EVENTS: ResourceIndexing = {
  kind: 'Event',
  apiVersion: 'v1',
  fieldsOf: () => ({}),
  indexedFields: [],
};

function eventIn(namespace: string, name: string) {
  return { metadata: { name, namespace } };
}

function storeWith(...keys: [namespace: string, name: string][]): ObjectStore {
  const store = new ObjectStore();
  store.register('events', EVENTS);
  for (const [namespace, name] of keys) store.create('events', eventIn(namespace, name));
  return store;
}

describe('ObjectStore with namespaced objects', () => {
  it('keeps the same name in two namespaces apart', () => {
    const store = storeWith(['default', 'e'], ['kube-system', 'e']);
    expect(store.get('events', objectKey('default', 'e'))?.namespace).toBe('default');
    expect(store.get('events', objectKey('kube-system', 'e'))?.namespace).toBe('kube-system');
    expect(store.get('events', 'e')).toBeUndefined();
  });

  it('lists one namespace, in name order, with pages and a remaining count', () => {
    // "a-b" sorts before "a/": a namespace's keys are a range of their own.
    const store = storeWith(['a', 'z'], ['a-b', 'x'], ['a', 'y'], ['b', 'w'], ['a', 'x']);
    const all = store.list('events').items.map((s) => s.key);
    expect(all).toEqual(['a-b/x', 'a/x', 'a/y', 'a/z', 'b/w']);
    const page = store.list('events', { namespace: 'a', limit: 2 });
    expect(page.items.map((s) => s.name)).toEqual(['x', 'y']);
    expect(page.continueAfter).toBe('a/y');
    expect(page.remainingItemCount).toBe(1);
    const rest = store.list('events', { namespace: 'a', after: 'a/y' });
    expect(rest.items.map((s) => s.name)).toEqual(['z']);
    expect(rest.continueAfter).toBeUndefined();
  });

  it('deletes an object once its time to live has run out, and a later write renews it', () => {
    const store = storeWith(['default', 'short'], ['default', 'renewed']);
    store.setExpiry('events', 'default/short', 1_000);
    store.setExpiry('events', 'default/renewed', 1_000);
    store.setExpiry('events', 'default/renewed', 5_000);
    expect(store.expire(999)).toBe(0);
    expect(store.expire(1_000)).toBe(1);
    expect(store.get('events', 'default/short')).toBeUndefined();
    expect(store.expire(4_999)).toBe(0);
    expect(store.expire(5_000)).toBe(1);
    expect(store.count('events')).toBe(0);
  });

  it('forgets the deadline of an object deleted before it', () => {
    const store = storeWith(['default', 'gone']);
    store.setExpiry('events', 'default/gone', 1_000);
    store.delete('events', 'default/gone');
    store.create('events', eventIn('default', 'gone'));
    expect(store.expire(2_000)).toBe(0);
    expect(store.count('events')).toBe(1);
  });
});
