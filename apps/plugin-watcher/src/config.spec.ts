import { loadConfig } from './config';

describe('plugin-watcher config', () => {
  it('defaults to node mode with upstream timings', () => {
    expect(loadConfig({ NODE_NAME: 'node-a' })).toMatchObject({
      WATCHER_MODE: 'node',
      NODE_NAME: 'node-a',
      WIPE_DELAY: 30_000,
      RECONNECT_INITIAL_DELAY: 5_000,
      RECONNECT_MAX_DELAY: 180_000,
      LEASE_DURATION: 10_000,
    });
  });

  it('needs NODE_NAME in node mode only', () => {
    expect(() => loadConfig({})).toThrow(/NODE_NAME: required in node mode/);
    expect(loadConfig({ WATCHER_MODE: 'shared', WIPE_DELAY: '1m' })).toMatchObject({
      WATCHER_MODE: 'shared',
      WIPE_DELAY: 60_000,
    });
  });

  it('names every bad variable', () => {
    expect(() =>
      loadConfig({ WATCHER_MODE: 'cluster', WIPE_DELAY: 'soon', REDIS_URL: 'http://x' }),
    ).toThrow(
      /REDIS_URL: must be a URL[\s\S]*WATCHER_MODE: must be node or shared[\s\S]*WIPE_DELAY/,
    );
  });
});
