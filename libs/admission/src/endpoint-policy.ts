import { lookup as dnsLookup } from 'node:dns/promises';
import { isAbsolute, normalize } from 'node:path';
import { grpcTarget, parseEndpoint } from '@slicekeeper/proto';
import type { PluginEndpoint } from '@slicekeeper/proto';
import { TerminalError, errorMessage } from '@slicekeeper/errors';
import { admissionError } from './admission-error';
import {
  LINK_LOCAL_RANGES,
  LOOPBACK_RANGES,
  METADATA_RANGES,
  NEVER_RANGES,
  parseIp,
  parseIpRange,
  rangeContains,
} from './ip-range';
import type { IpAddress, IpRange } from './ip-range';

declare const admitted: unique symbol;

/**
 * An endpoint that passed the policy, with the gRPC target to dial. Only
 * {@link EndpointPolicy.admit} makes one, so a prober that takes it cannot dial an unchecked
 * address.
 */
export interface AdmittedEndpoint {
  /** The endpoint as registered. */
  readonly endpoint: string;
  /** What to dial: the socket, or the checked IP address a name resolved to. */
  readonly target: string;
  readonly [admitted]: true;
}

export interface EndpointPolicyOptions {
  /**
   * Directories plugin sockets may live in (absolute), e.g. `/var/lib/kubelet/plugins`. A unix
   * endpoint must be strictly inside one of them. @defaultValue [] (no unix endpoints)
   */
  socketDirectories?: readonly string[];
  /**
   * TCP destinations that may be dialled: DNS names (`gpu.drivers.svc`), wildcard suffixes
   * (`*.drivers.svc.cluster.local`), IP addresses and CIDR blocks (`10.0.0.0/8`).
   * @defaultValue [] (no TCP endpoints)
   */
  tcpHosts?: readonly string[];
  /** Permit loopback addresses (local development and tests). @defaultValue false */
  allowLoopback?: boolean;
  /** Permit link-local addresses (metadata services stay forbidden). @defaultValue false */
  allowLinkLocal?: boolean;
  /** Resolves a DNS name to its addresses; injected for tests. @defaultValue `dns.lookup` */
  lookup?: (host: string) => Promise<string[]>;
  /**
   * Bound on resolving a name, ms: getaddrinfo has no timeout of its own, and a request must not
   * hang on a slow resolver. @defaultValue 2000
   */
  lookupTimeoutMs?: number;
}

/** The outcome of the static (no DNS) check of an endpoint. */
export type EndpointCheck =
  | { ok: true; parsed: PluginEndpoint; resolve: boolean }
  | { ok: false; code: 'invalid-endpoint' | 'endpoint-forbidden'; message: string };

/**
 * Host names of metadata services, refused whatever the allowlist says: a wildcard such as
 * `*.internal` must not open `metadata.google.internal`.
 */
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.azure.internal',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** Longest unix socket path Linux accepts (`sun_path` is 108 bytes with the NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Decides which plugin endpoints slicekeeper may dial, so that a registration cannot make it
 * connect to arbitrary addresses (SSRF): unix sockets only inside the configured directories,
 * TCP only to configured names and CIDRs, never to metadata services, unspecified, multicast or
 * broadcast addresses, and to loopback and link-local addresses only when configured. Names are
 * resolved here and the checked address is what gets dialled, so DNS cannot swap in another
 * address between the check and the dial.
 */
export class EndpointPolicy {
  private readonly socketDirectories: readonly string[];
  private readonly names: readonly string[];
  private readonly suffixes: readonly string[];
  private readonly ranges: readonly IpRange[];
  private readonly allowLoopback: boolean;
  private readonly allowLinkLocal: boolean;
  private readonly lookup: (host: string) => Promise<string[]>;
  private readonly lookupTimeoutMs: number;

  /** Throws a `TerminalError` naming every bad entry. */
  constructor(options: EndpointPolicyOptions) {
    const problems: string[] = [];
    this.socketDirectories = (options.socketDirectories ?? []).map((dir) => {
      const trimmed = dir.length > 1 ? dir.replace(/\/+$/, '') : dir;
      if (!isAbsolute(trimmed) || normalize(trimmed) !== trimmed || trimmed === '/') {
        problems.push(`socket directory "${dir}" must be an absolute, normalized path below /`);
      }
      return trimmed;
    });
    const names: string[] = [];
    const suffixes: string[] = [];
    const ranges: IpRange[] = [];
    for (const entry of options.tcpHosts ?? []) {
      const host = entry.trim().toLowerCase();
      if (host.includes('/') || parseIp(host) !== undefined) {
        const range = parseIpRange(host);
        if (typeof range === 'string') problems.push(range);
        else ranges.push(range);
      } else if (host.startsWith('*.') && isDnsName(host.slice(2))) {
        suffixes.push(host.slice(1));
      } else if (isDnsName(host) && !looksNumeric(host)) {
        names.push(host);
      } else {
        problems.push(`"${entry}" is not a host name, *.suffix, IP address or CIDR`);
      }
    }
    if (problems.length > 0) {
      throw new TerminalError(`invalid endpoint policy: ${problems.join('; ')}`, {
        code: 'invalid-config',
      });
    }
    this.names = names;
    this.suffixes = suffixes;
    this.ranges = ranges;
    this.allowLoopback = options.allowLoopback ?? false;
    this.allowLinkLocal = options.allowLinkLocal ?? false;
    this.lookup = options.lookup ?? defaultLookup;
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? 2000;
  }

  /** The static check: syntax, directories, names and IP literals; no DNS. */
  check(endpoint: string): EndpointCheck {
    const parsed = parseEndpoint(endpoint);
    if (typeof parsed === 'string') {
      return { ok: false, code: 'invalid-endpoint', message: `endpoint "${endpoint}": ${parsed}` };
    }
    if (parsed.kind === 'unix') return this.checkSocket(endpoint, parsed.path, parsed);
    const address = parseIp(parsed.host);
    if (address !== undefined) {
      const problem = this.addressProblem(address, true);
      return problem === undefined
        ? { ok: true, parsed, resolve: false }
        : forbidden(endpoint, problem);
    }
    const host = parsed.host.toLowerCase();
    if (looksNumeric(host)) {
      // `2130706433` or `0x7f.1` are IPv4 addresses to getaddrinfo, not names.
      return forbidden(endpoint, 'a numeric host must be a dotted-quad IPv4 address');
    }
    if (METADATA_NAMES.has(host)) return forbidden(endpoint, 'metadata services are never dialled');
    if (!this.names.includes(host) && !this.suffixes.some((suffix) => host.endsWith(suffix))) {
      return forbidden(endpoint, `host "${host}" is not in the TCP allowlist`);
    }
    return { ok: true, parsed, resolve: true };
  }

  /**
   * Checks an endpoint and, for a DNS name, every address it resolves to. Throws an admission
   * error (`invalid-endpoint`, `endpoint-forbidden`, `plugin-unreachable` when the name does not
   * resolve) before anything is dialled.
   */
  async admit(endpoint: string): Promise<AdmittedEndpoint> {
    const checked = this.check(endpoint);
    if (!checked.ok) throw admissionError(checked.code, checked.message);
    const { parsed } = checked;
    if (parsed.kind === 'unix' || !checked.resolve) {
      return makeAdmitted(endpoint, grpcTarget(parsed));
    }
    let addresses: string[];
    let timer: NodeJS.Timeout | undefined;
    try {
      addresses = await Promise.race([
        this.lookup(parsed.host),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            reject(new Error(`no answer within ${this.lookupTimeoutMs}ms`));
          }, this.lookupTimeoutMs);
        }),
      ]);
    } catch (error) {
      throw admissionError(
        'plugin-unreachable',
        `endpoint "${endpoint}": cannot resolve "${parsed.host}": ${errorMessage(error)}`,
        error,
      );
    } finally {
      clearTimeout(timer);
    }
    const parsedAddresses = addresses.map((text) => ({ text, address: parseIp(text) }));
    for (const { text, address } of parsedAddresses) {
      const problem =
        address === undefined ? 'not an IP address' : this.addressProblem(address, false);
      if (problem !== undefined) {
        throw admissionError(
          'endpoint-forbidden',
          `endpoint "${endpoint}": "${parsed.host}" resolves to ${text}: ${problem}`,
        );
      }
    }
    const first = parsedAddresses[0]?.text;
    if (first === undefined) {
      throw admissionError('plugin-unreachable', `endpoint "${endpoint}": no address`);
    }
    return makeAdmitted(endpoint, grpcTarget({ kind: 'tcp', host: first, port: parsed.port }));
  }

  private checkSocket(endpoint: string, path: string, parsed: PluginEndpoint): EndpointCheck {
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
      return {
        ok: false,
        code: 'invalid-endpoint',
        message: `endpoint "${endpoint}": a socket path must be at most ${MAX_SOCKET_PATH_BYTES} bytes`,
      };
    }
    const inside = this.socketDirectories.some((dir) =>
      dir === '/' ? false : path.startsWith(`${dir}/`),
    );
    if (!inside) {
      const dirs = this.socketDirectories.length === 0 ? 'none' : this.socketDirectories.join(', ');
      return forbidden(endpoint, `sockets must be inside an allowed directory (${dirs})`);
    }
    return { ok: true, parsed, resolve: false };
  }

  /**
   * Why an address may not be dialled, or undefined. `listed` requires an IP literal to be in a
   * configured CIDR; a resolved address of an allowed name needs not be.
   */
  private addressProblem(address: IpAddress, listed: boolean): string | undefined {
    const within = (ranges: readonly IpRange[]) => ranges.some((r) => rangeContains(r, address));
    if (within(NEVER_RANGES))
      return 'unspecified, multicast and broadcast addresses are never dialled';
    if (within(METADATA_RANGES)) return 'metadata services are never dialled';
    if (within(LOOPBACK_RANGES)) {
      return this.allowLoopback ? undefined : 'loopback addresses are not allowed';
    }
    if (within(LINK_LOCAL_RANGES)) {
      return this.allowLinkLocal ? undefined : 'link-local addresses are not allowed';
    }
    if (listed && !within(this.ranges)) return 'the address is not in the TCP allowlist';
    return undefined;
  }
}

function forbidden(endpoint: string, problem: string): EndpointCheck {
  return { ok: false, code: 'endpoint-forbidden', message: `endpoint "${endpoint}": ${problem}` };
}

function makeAdmitted(endpoint: string, target: string): AdmittedEndpoint {
  return { endpoint, target } as AdmittedEndpoint;
}

/**
 * Whether getaddrinfo would read `host` as an IPv4 address in a legacy form (`2130706433`,
 * `0x7f.1`, `127.1`): a real name never ends in a numeric label.
 */
function looksNumeric(host: string): boolean {
  return /^(0x[0-9a-f]*|\d+)$/.test(host.slice(host.lastIndexOf('.') + 1));
}

function isDnsName(host: string): boolean {
  return /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/.test(
    host,
  );
}

async function defaultLookup(host: string): Promise<string[]> {
  const results = await dnsLookup(host, { all: true, verbatim: true });
  return results.map((r) => r.address);
}
