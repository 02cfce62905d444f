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
      /PORT: .*"http"[\s\S]*PLUGIN_ALLOW_LOOPBACK: .*"maybe"[\s\S]*BODY_LIMIT_BYTES: must be at least 1024/,
    );
  });

  it('takes a trace link template with {traceId} in an http(s) URL, and refuses others', () => {
    const template = 'http://localhost:16686/trace/{traceId}';
    expect(
      loadConfig({ TOKEN_FILE: '/t.json', TRACE_URL_TEMPLATE: template }).TRACE_URL_TEMPLATE,
    ).toBe(template);
    expect(() =>
      loadConfig({ TOKEN_FILE: '/t.json', TRACE_URL_TEMPLATE: 'http://localhost:16686/search' }),
    ).toThrow(/TRACE_URL_TEMPLATE: must contain \{traceId\}/);
    expect(() =>
      loadConfig({ TOKEN_FILE: '/t.json', TRACE_URL_TEMPLATE: 'javascript:alert({traceId})' }),
    ).toThrow(/TRACE_URL_TEMPLATE: must be a URL starting with http:\/\/ or https:\/\//);
  });

  // Rules across variables run once every variable parses, as the Redis ones do.
  it.each([
    {
      name: 'static-needs-token-file',
      env: {},
      problem: /TOKEN_FILE: required with AUTH_MODE=static/,
    },
    {
      name: 'both-needs-token-file-and-cluster',
      env: { AUTH_MODE: 'both' },
      problem:
        /TOKEN_FILE: required with AUTH_MODE=both[\s\S]*KUBECONFIG: required with AUTH_MODE=both outside a pod/,
    },
    {
      name: 'kubernetes-needs-cluster',
      env: { AUTH_MODE: 'kubernetes' },
      problem: /KUBECONFIG: required with AUTH_MODE=kubernetes outside a pod/,
    },
    {
      name: 'cert-without-key',
      env: { TOKEN_FILE: '/t.json', TLS_CERT_FILE: '/tls/tls.crt' },
      problem: /TLS_KEY_FILE: TLS_CERT_FILE and TLS_KEY_FILE go together/,
    },
    {
      name: 'unknown-mode',
      env: { AUTH_MODE: 'oidc' },
      problem: /AUTH_MODE: must be one of static, kubernetes, both/,
    },
  ])('$name', ({ env, problem }) => {
    expect(() => loadConfig(env)).toThrow(problem);
  });

  it('kubernetes mode in a pod needs no token file, and reads the review settings', () => {
    expect(
      loadConfig({
        AUTH_MODE: 'kubernetes',
        KUBERNETES_SERVICE_HOST: '10.96.0.1',
        TOKEN_AUDIENCE: 'slicekeeper,slicekeeper.example.com',
        TLS_CERT_FILE: '/tls/tls.crt',
        TLS_KEY_FILE: '/tls/tls.key',
      }),
    ).toMatchObject({
      TOKEN_AUDIENCE: ['slicekeeper', 'slicekeeper.example.com'],
      TOKEN_REVIEW_CACHE_TTL: 30_000,
      ACCESS_REVIEW_CACHE_TTL: 5_000,
      REVIEW_CACHE_SIZE: 10_000,
      REVIEW_TIMEOUT: 5_000,
    });
  });

  it('describes every variable, for the README table', () => {
    for (const [name, schema] of Object.entries(registrationApiConfigSchema.shape)) {
      expect([name, schema.description]).toEqual([name, expect.any(String)]);
    }
  });
});
