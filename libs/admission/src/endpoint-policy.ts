import { lookup as dnsLookup } from 'node:dns/promises';
import { lstat, realpath } from 'node:fs/promises';
import { isIP } from 'node:net';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
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
  /**
   * What to dial: the socket's real path (symlinks resolved), or the checked IP address a name
   * resolved to — never the name again.
   */
  readonly target: string;
  readonly [admitted]: true;
}

/** The file-system calls the policy follows socket paths with; injected for tests. */
export interface SocketFileSystem {
  /** Resolves every symlink, as `fs.promises.realpath`; rejects `ENOENT` when nothing is there. */
  realpath(path: string): Promise<string>;
  /** Resolves when a directory entry (a dangling symlink too) is at `path`, as `fs.promises.lstat`. */
  lstat(path: string): Promise<unknown>;
}

export interface EndpointPolicyOptions {
  /**
   * Directories plugin sockets may live in (absolute), e.g. `/var/lib/kubelet/plugins`. A unix
   * endpoint must be strictly inside one of them, both as written and once every symlink (in
   * the directories too) is resolved. @defaultValue [] (no unix endpoints)
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
  /** How socket paths are resolved; injected for tests. @defaultValue `node:fs/promises` */
  fileSystem?: SocketFileSystem;
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
 * connect to arbitrary addresses (SSRF): unix sockets only inside the configured directories
 * (after symlinks), TCP only to configured names and CIDRs, never to metadata services,
 * unspecified, multicast or broadcast addresses, and to loopback and link-local addresses only
 * when configured. An IPv6 address that embeds an IPv4 address (mapped, compatible, SIIT, NAT64)
 * is judged as that IPv4 address.
 *
 * {@link EndpointPolicy.admit} is the check made before every dial — the registration API's
 * probe and each of the plugin-watcher's (re)connects — and returns what to dial: the checked
 * address a name resolved to (DNS cannot swap in another between the check and the dial), or the
 * socket's real path. A symlink swapped into the path between the check and the connect is not
 * caught: that race needs write access to an allowed directory.
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
  private readonly fileSystem: SocketFileSystem;

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
    this.fileSystem = options.fileSystem ?? { realpath: (path) => realpath(path), lstat };
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
        : forbidden(endpoint, `${literalPrefix(parsed.host, address)}${problem}`);
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
   * Checks an endpoint as it is now — every address a DNS name resolves to, the real path of a
   * socket — and returns what to dial. Call it before every dial, and dial only its `target`.
   * Throws an admission error (`invalid-endpoint`, `endpoint-forbidden`, `plugin-unreachable`
   * when a name does not resolve or a socket's directory does not exist).
   */
  async admit(endpoint: string): Promise<AdmittedEndpoint> {
    const checked = this.check(endpoint);
    if (!checked.ok) throw admissionError(checked.code, checked.message);
    const { parsed } = checked;
    if (parsed.kind === 'unix') return this.admitSocket(endpoint, parsed.path);
    if (!checked.resolve) return makeAdmitted(endpoint, grpcTarget(parsed));
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
        const which = address === undefined ? '' : embedded(text, address);
        const resolved = which === '' ? text : `${text}, which ${which}`;
        throw admissionError(
          'endpoint-forbidden',
          `endpoint "${endpoint}": "${parsed.host}" resolves to ${resolved}: ${problem}`,
        );
      }
    }
    const first = parsedAddresses[0]?.text;
    if (first === undefined) {
      throw admissionError('plugin-unreachable', `endpoint "${endpoint}": no address`);
    }
    return makeAdmitted(endpoint, grpcTarget({ kind: 'tcp', host: first, port: parsed.port }));
  }

  /**
   * Follows a socket path that passed the static check to where it really leads, and admits it
   * only when that is strictly inside the real path of an allowed directory: a symlinked socket
   * or directory must not reach other sockets on the host. The socket may not exist yet (it is
   * then dialled where it would be); its directory must.
   */
  private async admitSocket(endpoint: string, path: string): Promise<AdmittedEndpoint> {
    const fs = this.fileSystem;
    let real: string;
    try {
      real = join(await fs.realpath(dirname(path)), basename(path));
    } catch (error) {
      throw admissionError(
        'plugin-unreachable',
        `endpoint "${endpoint}": socket directory ${dirname(path)}: ${fsErrorMessage(error)}`,
        error,
      );
    }
    try {
      real = await fs.realpath(real);
    } catch (error) {
      if (!isNotFound(error)) {
        throw admissionError(
          'plugin-unreachable',
          `endpoint "${endpoint}": ${fsErrorMessage(error)}`,
          error,
        );
      }
      // Nothing there yet, unless a symlink that leads nowhere: it could be pointed anywhere
      // before the dial follows it.
      const entry = await fs.lstat(real).then(
        () => true,
        () => false,
      );
      if (entry) {
        throw admissionError(
          'endpoint-forbidden',
          `endpoint "${endpoint}": the socket is a symlink to nothing`,
        );
      }
    }
    const directories = await this.realSocketDirectories();
    if (!directories.some((dir) => real.startsWith(`${dir}/`))) {
      const allowed = directories.length === 0 ? 'none exists' : directories.join(', ');
      throw admissionError(
        'endpoint-forbidden',
        `endpoint "${endpoint}": the socket is really ${real}, outside the allowed directories (${allowed})`,
      );
    }
    if (Buffer.byteLength(real) > MAX_SOCKET_PATH_BYTES) {
      throw admissionError(
        'invalid-endpoint',
        `endpoint "${endpoint}": the socket's real path ${real} is longer than ${MAX_SOCKET_PATH_BYTES} bytes`,
      );
    }
    return makeAdmitted(endpoint, `unix://${real}`);
  }

  /**
   * The real paths of the allowed directories that exist now; resolved at every check, as an
   * allowed directory may be created or moved after start-up. A directory that resolves to `/`
   * admits nothing (`//` starts no real path).
   */
  private async realSocketDirectories(): Promise<string[]> {
    const resolved = await Promise.all(
      this.socketDirectories.map((dir) => this.fileSystem.realpath(dir).catch(() => undefined)),
    );
    return resolved.filter((dir) => dir !== undefined);
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

/** `embeds the IPv4 address 127.0.0.1` when `text` is an IPv6 form judged as `address`, or ''. */
function embedded(text: string, address: IpAddress): string {
  return isIP(text) === 6 && address.family === 4
    ? `embeds the IPv4 address ${address.bytes.join('.')}`
    : '';
}

/** What to say before the rule an IP literal broke: nothing, unless it embeds an IPv4 address. */
function literalPrefix(text: string, address: IpAddress): string {
  const which = embedded(text, address);
  return which === '' ? '' : `${text} ${which}: `;
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

// Duck-typed: node's fs errors need not be `instanceof Error` of this realm (under jest).
function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';
}

function fsErrorMessage(error: unknown): string {
  return typeof error === 'object' && error !== null && 'message' in error
    ? String(error.message)
    : errorMessage(error);
}

async function defaultLookup(host: string): Promise<string[]> {
  const results = await dnsLookup(host, { all: true, verbatim: true });
  return results.map((r) => r.address);
}
