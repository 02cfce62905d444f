import { EmulatorHooks } from './emulator-hooks';

const createSlice = { verb: 'create', resource: 'resourceslices', name: 'a' };
const getNode = { verb: 'get', resource: 'nodes', name: 'node-a' };

describe('EmulatorHooks', () => {
  it('fails every matching request while a fault with durationMs lasts, then none', () => {
    let now = 1_000;
    const hooks = new EmulatorHooks(() => now);
    hooks.injectFault({ resource: 'resourceslices', status: 500, durationMs: 30_000 });

    for (let i = 0; i < 50; i++) expect(hooks.takeFault(createSlice)?.status).toBe(500);
    expect(hooks.takeFault(getNode)).toBeUndefined();
    now += 29_999;
    expect(hooks.takeFault(createSlice)?.status).toBe(500);
    now += 1;
    expect(hooks.takeFault(createSlice)).toBeUndefined();
  });

  it('spends a fault with durationMs and times at whichever comes first', () => {
    let now = 0;
    const hooks = new EmulatorHooks(() => now);
    hooks.injectFault({ status: 429, durationMs: 10_000, times: 2 });
    expect(hooks.takeFault(getNode)?.status).toBe(429);
    expect(hooks.takeFault(getNode)?.status).toBe(429);
    expect(hooks.takeFault(getNode)).toBeUndefined();

    hooks.injectFault({ status: 429, durationMs: 10_000, times: 5 });
    now += 10_000;
    expect(hooks.takeFault(getNode)).toBeUndefined();
  });

  it('logs when each request was answered', () => {
    let now = 5_000;
    const hooks = new EmulatorHooks(() => now);
    hooks.record(createSlice, 201, '7');
    now += 250;
    hooks.record(getNode, 200);
    expect(hooks.requestLog()).toEqual([
      {
        seq: 1,
        verb: 'create',
        resource: 'resourceslices',
        name: 'a',
        code: 201,
        resourceVersion: '7',
        at: 5_000,
      },
      { seq: 2, verb: 'get', resource: 'nodes', name: 'node-a', code: 200, at: 5_250 },
    ]);
  });
});
