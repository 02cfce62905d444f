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

  it('discovery: off without REGISTRATION_API_URL, with the slicekeeper registration directory by default', () => {
    const config = loadConfig({ NODE_NAME: 'node-a' });
    expect(config.REGISTRATION_API_URL).toBeUndefined();
    expect(config).toMatchObject({
      PLUGIN_REGISTRATION_DIR: '/var/lib/slicekeeper/plugins_registry',
      DISCOVERY_RESCAN_INTERVAL: 10_000,
    });
  });

  it.each([
    {
      name: 'kubelet-plugins-registry',
      env: {
        PLUGIN_SOCKET_DIRS: '/var/lib/kubelet/plugins,/var/lib/kubelet/plugins_registry',
        PLUGIN_REGISTRATION_DIR: '/var/lib/kubelet/plugins_registry',
      },
    },
    {
      name: 'inside-a-socket-dir',
      env: { PLUGIN_SOCKET_DIRS: '/run/sk/', PLUGIN_REGISTRATION_DIR: '/run/sk/registry' },
    },
  ])('discovery: accepts a registration directory ($name)', ({ env }) => {
    expect(
      loadConfig({
        NODE_NAME: 'node-a',
        REGISTRATION_API_URL: 'https://registration-api:8443',
        REGISTRATION_TOKEN_FILE: '/var/run/secrets/slicekeeper/token',
        REGISTRATION_API_CA_FILE: '/var/run/secrets/slicekeeper/ca.crt',
        ...env,
      }),
    ).toMatchObject({
      PLUGIN_REGISTRATION_DIR: env.PLUGIN_REGISTRATION_DIR,
      // The one name of the CA variable, as the example driver and the SDKs spell it.
      REGISTRATION_API_CA_FILE: '/var/run/secrets/slicekeeper/ca.crt',
    });
  });

  it.each([
    {
      name: 'shared-mode',
      env: { WATCHER_MODE: 'shared', REGISTRATION_TOKEN_FILE: '/t' },
      error: /REGISTRATION_API_URL: discovery runs in node mode only/,
    },
    {
      name: 'no-token-file',
      env: { NODE_NAME: 'node-a' },
      error: /REGISTRATION_TOKEN_FILE: required when REGISTRATION_API_URL is set/,
    },
    {
      name: 'directory-outside-the-socket-dirs',
      env: { NODE_NAME: 'node-a', REGISTRATION_TOKEN_FILE: '/t' },
      error: /PLUGIN_REGISTRATION_DIR: must be one of PLUGIN_SOCKET_DIRS or inside one/,
    },
    {
      name: 'relative-directory',
      env: {
        NODE_NAME: 'node-a',
        REGISTRATION_TOKEN_FILE: '/t',
        PLUGIN_REGISTRATION_DIR: 'registry',
      },
      error: /PLUGIN_REGISTRATION_DIR: must be an absolute, normalized path/,
    },
  ])('discovery: refuses $name', ({ env, error }) => {
    expect(() => loadConfig({ REGISTRATION_API_URL: 'http://127.0.0.1:8080', ...env })).toThrow(
      error,
    );
  });
});
