import { isIP } from 'node:net';

/** An IP address as its family and big-endian bytes (4 or 16). */
export interface IpAddress {
  readonly family: 4 | 6;
  readonly bytes: Uint8Array;
}

/** A CIDR block such as `10.0.0.0/8` or `fd00::/8`. */
export interface IpRange {
  readonly address: IpAddress;
  readonly prefixLength: number;
  /** As configured, for messages. */
  readonly text: string;
}

/**
 * Parses an IPv4 or IPv6 address. An IPv6 address that embeds an IPv4 address is returned as
 * that IPv4 address (see {@link embeddedIpv4}): it reaches the same host, so it must meet the
 * same rules.
 */
export function parseIp(text: string): IpAddress | undefined {
  const literal = parseIpLiteral(text);
  return literal === undefined ? undefined : (embeddedIpv4(literal) ?? literal);
}

/** Parses an IPv4 or IPv6 address as written, without unwrapping an embedded IPv4 address. */
export function parseIpLiteral(text: string): IpAddress | undefined {
  const family = isIP(text);
  if (family === 4) return { family: 4, bytes: Uint8Array.from(text.split('.').map(Number)) };
  return family === 6 ? { family: 6, bytes: parseIpv6(text) } : undefined;
}

/**
 * IPv6 forms that carry an IPv4 address in their last 32 bits, and reach that IPv4 host: on the
 * node itself (mapped and compatible addresses, SIIT) or through a translator (NAT64).
 */
const EMBEDDING_PREFIXES: readonly (readonly number[])[] = [
  // ::ffff:a.b.c.d, IPv4-mapped (RFC 4291).
  [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff],
  // ::ffff:0:a.b.c.d, IPv4-translated (SIIT, RFC 6145/7915).
  [0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0],
  // ::a.b.c.d, IPv4-compatible (deprecated by RFC 4291, still routed by some stacks).
  [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
  // 64:ff9b::a.b.c.d, the NAT64 well-known prefix (RFC 6052).
  [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0],
  // 64:ff9b:1::/48, the NAT64 local-use block (RFC 8215): prefixes carved from it are taken to
  // be /96, the usual length, with the IPv4 address in the last 32 bits.
  [0, 0x64, 0xff, 0x9b, 0, 1],
];

/**
 * The IPv4 address an IPv6 address embeds (mapped, compatible, SIIT, NAT64 `64:ff9b::/96` and
 * `64:ff9b:1::/48`), or undefined. `::` and `::1` are themselves, not IPv4-compatible.
 */
export function embeddedIpv4(address: IpAddress): IpAddress | undefined {
  if (address.family !== 6) return undefined;
  const { bytes } = address;
  const prefix = EMBEDDING_PREFIXES.find((p) => p.every((byte, i) => bytes[i] === byte));
  if (prefix === undefined) return undefined;
  const ipv4 = bytes.slice(12);
  const compatible = prefix.length === 12 && prefix.every((byte) => byte === 0);
  if (compatible && ipv4[0] === 0 && ipv4[1] === 0 && ipv4[2] === 0 && (ipv4[3] ?? 0) <= 1) {
    return undefined;
  }
  return { family: 4, bytes: ipv4 };
}

/**
 * Parses `address/prefix`; a bare address is a block of one. A block written in an IPv4-embedding
 * form with a prefix of 96 bits or more (`::ffff:10.0.0.0/104`) is the block of IPv4 addresses
 * it embeds; a shorter one stays an IPv6 block. Returns why not, as a string.
 */
export function parseIpRange(text: string): IpRange | string {
  const [addressText = '', prefixText, ...rest] = text.split('/');
  const literal = parseIpLiteral(addressText);
  if (literal === undefined || rest.length > 0) return `"${text}" is not an IP address or CIDR`;
  const literalMax = literal.family === 4 ? 32 : 128;
  const prefixLength = prefixText === undefined ? literalMax : Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText ?? '0') || prefixLength > literalMax) {
    return `"${text}" has an invalid prefix length`;
  }
  const embedded = embeddedIpv4(literal);
  if (embedded !== undefined && prefixLength >= 96) {
    return { address: embedded, prefixLength: prefixLength - 96, text };
  }
  return { address: literal, prefixLength, text };
}

/** Whether `range` contains `address` (never across families). */
export function rangeContains(range: IpRange, address: IpAddress): boolean {
  if (range.address.family !== address.family) return false;
  let bits = range.prefixLength;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if (((range.address.bytes[i] ?? 0) & mask) !== ((address.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

function ranges(...texts: string[]): IpRange[] {
  return texts.map((text) => {
    const range = parseIpRange(text);
    if (typeof range === 'string') throw new Error(range);
    return range;
  });
}

/** Loopback: the host slicekeeper itself runs on. */
export const LOOPBACK_RANGES = ranges('127.0.0.0/8', '::1/128');

/** Link-local: never routed; where cloud metadata and other node-local services live. */
export const LINK_LOCAL_RANGES = ranges('169.254.0.0/16', 'fe80::/10');

/**
 * Cloud instance-metadata and host-agent services. They hand out node credentials, so no
 * configuration opens them.
 */
export const METADATA_RANGES = ranges(
  // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean, Hetzner… instance metadata.
  '169.254.169.254/32',
  // AWS ECS task metadata and credentials.
  '169.254.170.2/32',
  // AWS EKS Pod Identity agent.
  '169.254.170.23/32',
  // AWS instance metadata over IPv6.
  'fd00:ec2::254/128',
  // AWS EKS Pod Identity agent over IPv6.
  'fd00:ec2::23/128',
  // Alibaba Cloud instance metadata.
  '100.100.100.200/32',
  // Azure wireserver (VM agent, extensions and their secrets).
  '168.63.129.16/32',
  // Tencent Cloud instance metadata.
  '169.254.0.23/32',
);

/**
 * Addresses that are never a plugin: unspecified (`0.0.0.0` reaches the local host on Linux),
 * multicast and broadcast.
 */
export const NEVER_RANGES = ranges(
  '0.0.0.0/8',
  '::/128',
  '224.0.0.0/4',
  '255.255.255.255/32',
  'ff00::/8',
);

function parseIpv6(text: string): Uint8Array {
  // Rewrite an embedded IPv4 tail (`::ffff:1.2.3.4`) as two hex groups first.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  let body = text;
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    body = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = body.split('::');
  const groups = (part: string | undefined): number[] =>
    part === undefined || part === '' ? [] : part.split(':').map((g) => parseInt(g, 16));
  const before = groups(head);
  const after = groups(rest);
  const words =
    rest === undefined
      ? before
      : [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => {
    bytes[i * 2] = word >> 8;
    bytes[i * 2 + 1] = word & 0xff;
  });
  return bytes;
}
