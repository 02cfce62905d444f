import { loadConfig, registrationApiConfigSchema } from './config';

describe('registration-api config', () => {
  it('needs only the token file, and parses lists and durations', () => {
    const config = loadConfig({
      TOKEN_FILE: '/etc/slicekeeper/tokens.json',
      PLUGIN_TCP_ALLOWLIST: ' 10.0.0.0/8, *.drivers.svc ,,',
      PLUGIN_CALL_TIMEOUT: '250ms',
    });
    expect(config).toMatchObject({
      PORT: 8080,
      TOKEN_FILE: '/etc/slicekeeper/tokens.json',
      PLUGIN_SOCKET_DIRS: ['/var/lib/kubelet/plugins'],
      PLUGIN_TCP_ALLOWLIST: ['10.0.0.0/8', '*.drivers.svc'],
      PLUGIN_ALLOW_LOOPBACK: false,
      PLUGIN_DIAL_TIMEOUT: 10_000,
      PLUGIN_CALL_TIMEOUT: 250,
      RATE_LIMIT_WINDOW: 60_000,
      BODY_LIMIT_BYTES: 16_384,
    });
  });

  it('names every bad variable at once', () => {
    expect(() =>
      loadConfig({ PORT: 'http', BODY_LIMIT_BYTES: '10', PLUGIN_ALLOW_LOOPBACK: 'maybe' }),
    ).toThrow(
      /PORT: .*"http"[\s\S]*TOKEN_FILE: required[\s\S]*PLUGIN_ALLOW_LOOPBACK: .*"maybe"[\s\S]*BODY_LIMIT_BYTES: must be at least 1024/,
    );
  });

  it('describes every variable, for the README table', () => {
    for (const [name, schema] of Object.entries(registrationApiConfigSchema.shape)) {
      expect([name, schema.description]).toEqual([name, expect.any(String)]);
    }
  });
});
