import { z } from 'zod';
import { endpointPolicyEnv, parseConfig } from './index';

const schema = z.object(endpointPolicyEnv);

describe('endpointPolicyEnv', () => {
  it('defaults to the kubelet plugin directory and nothing else', () => {
    expect(parseConfig(schema, {})).toEqual({
      PLUGIN_SOCKET_DIRS: ['/var/lib/kubelet/plugins'],
      PLUGIN_TCP_ALLOWLIST: [],
      PLUGIN_ALLOW_LOOPBACK: false,
      PLUGIN_ALLOW_LINK_LOCAL: false,
    });
  });

  it('parses comma-separated lists, trimmed, blanks dropped', () => {
    expect(
      parseConfig(schema, {
        PLUGIN_SOCKET_DIRS: '/run/plugins, /var/lib/kubelet/plugins,',
        PLUGIN_TCP_ALLOWLIST: ' 10.0.0.0/8, *.drivers.svc ,,',
        PLUGIN_ALLOW_LOOPBACK: 'yes',
      }),
    ).toMatchObject({
      PLUGIN_SOCKET_DIRS: ['/run/plugins', '/var/lib/kubelet/plugins'],
      PLUGIN_TCP_ALLOWLIST: ['10.0.0.0/8', '*.drivers.svc'],
      PLUGIN_ALLOW_LOOPBACK: true,
    });
  });

  it('names a bad value', () => {
    expect(() => parseConfig(schema, { PLUGIN_ALLOW_LINK_LOCAL: 'maybe' })).toThrow(
      /PLUGIN_ALLOW_LINK_LOCAL: must be true or false \(got "maybe"\)/,
    );
  });
});
