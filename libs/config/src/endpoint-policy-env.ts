import { envBoolean, envList } from './env';

/**
 * The plugin endpoint policy's variables. The registration API checks a registration with them
 * and the plugin-watcher checks every dial with them, so both read this one copy: the same
 * names, defaults and parsing, and the same values in a deployment.
 */
export const endpointPolicyEnv = {
  PLUGIN_SOCKET_DIRS: envList(
    '/var/lib/kubelet/plugins',
    'Comma-separated directories plugin unix sockets may live in; empty: no unix endpoints.',
  ),
  PLUGIN_TCP_ALLOWLIST: envList(
    '',
    'Comma-separated TCP destinations that may be dialled: host names, *.suffix wildcards, IP addresses, CIDRs; empty: no TCP endpoints.',
  ),
  PLUGIN_ALLOW_LOOPBACK: envBoolean(false, 'Permit loopback plugin endpoints (development only).'),
  PLUGIN_ALLOW_LINK_LOCAL: envBoolean(
    false,
    'Permit link-local plugin endpoints; metadata services stay forbidden.',
  ),
};
