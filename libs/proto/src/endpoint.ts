import { isIP } from 'node:net';
import { isAbsolute, normalize } from 'node:path';

/** A plugin endpoint: a unix socket path or a TCP host and port. */
export type PluginEndpoint =
  | { kind: 'unix'; path: string }
  | { kind: 'tcp'; host: string; port: number };

const HOSTNAME =
  /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/i;

/**
 * Parses an endpoint string: `unix:///absolute/path.sock` or `host:port` (`[v6]:port` for IPv6).
 * Returns why it is invalid as a string, so that callers can name the field. A unix path must be
 * absolute and normalized (no `..`, no `//`), so that an allowlist of directories can be checked
 * on the string itself; symlinks are for the endpoint policy, which follows them before a dial.
 */
export function parseEndpoint(endpoint: string): PluginEndpoint | string {
  if (endpoint.startsWith('unix://')) {
    const path = endpoint.slice('unix://'.length);
    if (!isAbsolute(path)) return 'a unix endpoint must be unix:///absolute/path';
    if (normalize(path) !== path || path.endsWith('/')) {
      return 'a unix socket path must be normalized (no "..", ".", "//" or trailing "/")';
    }
    if (path.includes('\0')) return 'a unix socket path must not contain NUL';
    return { kind: 'unix', path };
  }
  if (endpoint.includes('://')) return 'must be unix:///path or host:port';
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(endpoint);
  if (match === null) return 'must be unix:///path or host:port';
  const host = match[1] ?? match[2] ?? '';
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return 'port must be 1..65535';
  if (match[1] !== undefined ? isIP(host) !== 6 : isIP(host) !== 4 && !HOSTNAME.test(host)) {
    return 'host must be a DNS name, an IPv4 address or a bracketed IPv6 address';
  }
  return { kind: 'tcp', host, port };
}

/** The gRPC target for an endpoint, as @grpc/grpc-js dials it. */
export function grpcTarget(endpoint: PluginEndpoint): string {
  if (endpoint.kind === 'unix') return `unix://${endpoint.path}`;
  return isIP(endpoint.host) === 6
    ? `ipv6:[${endpoint.host}]:${endpoint.port}`
    : `${endpoint.host}:${endpoint.port}`;
}
