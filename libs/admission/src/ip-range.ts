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
 * Parses an IPv4 or IPv6 address. An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`) is returned
 * as the IPv4 address it maps to: it reaches the same host, so it must meet the same rules.
 */
export function parseIp(text: string): IpAddress | undefined {
  const family = isIP(text);
  if (family === 4) return { family: 4, bytes: Uint8Array.from(text.split('.').map(Number)) };
  if (family !== 6) return undefined;
  const bytes = parseIpv6(text);
  const mapped = bytes.slice(0, 12).every((b, i) => b === (i < 10 ? 0 : 0xff));
  return mapped ? { family: 4, bytes: bytes.slice(12) } : { family: 6, bytes };
}

/** Parses `address/prefix`; a bare address is a block of one. Returns why not, as a string. */
export function parseIpRange(text: string): IpRange | string {
  const [addressText = '', prefixText, ...rest] = text.split('/');
  const address = parseIp(addressText);
  if (address === undefined || rest.length > 0) return `"${text}" is not an IP address or CIDR`;
  const max = address.family === 4 ? 32 : 128;
  // A mapped IPv6 block applies to the IPv4 addresses it maps.
  const offset = isIP(addressText) === 6 && address.family === 4 ? 96 : 0;
  const prefixLength = prefixText === undefined ? max + offset : Number(prefixText);
  if (
    !/^\d{1,3}$/.test(prefixText ?? '0') ||
    prefixLength - offset < 0 ||
    prefixLength > max + offset
  ) {
    return `"${text}" has an invalid prefix length`;
  }
  return { address, prefixLength: prefixLength - offset, text };
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
 * Cloud instance-metadata services (AWS, GCP, Azure, OpenStack at 169.254.169.254; AWS ECS and
 * IPv6 IMDS; Alibaba). They hand out node credentials, so no configuration opens them.
 */
export const METADATA_RANGES = ranges(
  '169.254.169.254/32',
  '169.254.170.2/32',
  'fd00:ec2::254/128',
  '100.100.100.200/32',
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
