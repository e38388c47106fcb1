import { isIPv4, isIPv6 } from 'node:net';

/** Why an address is not a public unicast destination; `undefined` for one that is. */
export type ForbiddenRange =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared (CGNAT)'
  | 'multicast'
  | 'reserved';

interface Range {
  base: bigint;
  prefix: number;
  kind: ForbiddenRange;
}

function v4Range(cidr: string, kind: ForbiddenRange): Range {
  const [address, prefix] = cidr.split('/') as [string, string];
  return { base: parseIPv4(address)!, prefix: Number(prefix), kind };
}

function v6Range(cidr: string, kind: ForbiddenRange): Range {
  const [address, prefix] = cidr.split('/') as [string, string];
  return { base: parseIPv6(address)!, prefix: Number(prefix), kind };
}

/** IANA's IPv4 special-purpose registry: nothing here is a public web server's address. */
const IPV4_RANGES: Range[] = [
  v4Range('0.0.0.0/8', 'unspecified'),
  v4Range('10.0.0.0/8', 'private'),
  v4Range('100.64.0.0/10', 'shared (CGNAT)'),
  v4Range('127.0.0.0/8', 'loopback'),
  v4Range('169.254.0.0/16', 'link-local'),
  v4Range('172.16.0.0/12', 'private'),
  v4Range('192.0.0.0/24', 'reserved'),
  v4Range('192.0.2.0/24', 'reserved'),
  v4Range('192.88.99.0/24', 'reserved'),
  v4Range('192.168.0.0/16', 'private'),
  v4Range('198.18.0.0/15', 'reserved'),
  v4Range('198.51.100.0/24', 'reserved'),
  v4Range('203.0.113.0/24', 'reserved'),
  v4Range('224.0.0.0/4', 'multicast'),
  // 240/4 includes the limited broadcast address 255.255.255.255
  v4Range('240.0.0.0/4', 'reserved'),
];

/**
 * IPv6 special-purpose ranges. Prefixes that embed an IPv4 address (mapped, NAT64, 6to4) are not
 * listed: the embedded address is checked instead (see embeddedIPv4), so ::ffff:10.0.0.1 is as
 * private as 10.0.0.1 and ::ffff:8.8.8.8 as public as 8.8.8.8.
 */
const IPV6_RANGES: Range[] = [
  v6Range('::/128', 'unspecified'),
  v6Range('::1/128', 'loopback'),
  // IPv4-compatible addresses (deprecated) and the rest of ::/8
  v6Range('::/8', 'reserved'),
  v6Range('64:ff9b:1::/48', 'reserved'),
  v6Range('100::/64', 'reserved'),
  // IETF protocol assignments, Teredo included
  v6Range('2001::/23', 'reserved'),
  v6Range('2001:db8::/32', 'reserved'),
  v6Range('3fff::/20', 'reserved'),
  v6Range('5f00::/16', 'reserved'),
  v6Range('fc00::/7', 'private'),
  v6Range('fe80::/10', 'link-local'),
  // site-local, deprecated but still routed by some networks
  v6Range('fec0::/10', 'private'),
  v6Range('ff00::/8', 'multicast'),
];

const IPV4_MAPPED = parseIPv6('::ffff:0:0')!;
const NAT64 = parseIPv6('64:ff9b::')!;
const SIX_TO_FOUR = parseIPv6('2002::')!;

/**
 * The range that makes `address` (a literal IPv4 or IPv6 address, optionally with a zone) unfit as
 * a webhook destination, or undefined when it is a public unicast address.
 */
export function forbiddenRangeOf(address: string): ForbiddenRange | undefined {
  const literal = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = parseIPv4(literal);
  if (v4 !== undefined) return find(IPV4_RANGES, v4, 32);
  const v6 = parseIPv6(literal);
  if (v6 === undefined) return 'reserved';
  const embedded = embeddedIPv4(v6);
  if (embedded !== undefined) return find(IPV4_RANGES, embedded, 32);
  return find(IPV6_RANGES, v6, 128);
}

const IPV4_LOOPBACK = v4Range('127.0.0.0/8', 'loopback');
const IPV6_LOOPBACK = parseIPv6('::1')!;

/**
 * Whether `address` (a literal, brackets allowed) is this machine's own: 127.0.0.0/8, ::1, or an
 * IPv4-mapped form of the former (::ffff:127.0.0.1, which a dual-stack socket connects to locally).
 * NAT64 and 6to4 addresses embedding 127.x are not: they are routed to a gateway.
 */
export function isLoopbackAddress(address: string): boolean {
  const literal = address.replace(/^\[|\]$/g, '');
  const v4 = parseIPv4(literal);
  if (v4 !== undefined) return find([IPV4_LOOPBACK], v4, 32) !== undefined;
  const v6 = parseIPv6(literal);
  if (v6 === undefined) return false;
  if (v6 === IPV6_LOOPBACK) return true;
  return v6 >> 32n === IPV4_MAPPED >> 32n && find([IPV4_LOOPBACK], v6 & 0xffffffffn, 32) !== undefined;
}

/** The IPv4 address carried inside an IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 address. */
function embeddedIPv4(v6: bigint): bigint | undefined {
  if (v6 >> 32n === IPV4_MAPPED >> 32n) return v6 & 0xffffffffn;
  if (v6 >> 32n === NAT64 >> 32n) return v6 & 0xffffffffn;
  if (v6 >> 112n === SIX_TO_FOUR >> 112n) return (v6 >> 80n) & 0xffffffffn;
  return undefined;
}

function find(ranges: Range[], value: bigint, bits: number): ForbiddenRange | undefined {
  for (const range of ranges) {
    const shift = BigInt(bits - range.prefix);
    if (value >> shift === range.base >> shift) return range.kind;
  }
  return undefined;
}

function parseIPv4(text: string): bigint | undefined {
  if (!isIPv4(text)) return undefined;
  return text.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function parseIPv6(text: string): bigint | undefined {
  if (!isIPv6(text)) return undefined;
  let groups = text;
  // a trailing dotted IPv4 part stands for the last two groups
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(groups);
  if (dotted) {
    const v4 = parseIPv4(dotted[1]!);
    if (v4 === undefined) return undefined;
    groups = `${groups.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = groups.split('::') as [string, string | undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const missing = 8 - headGroups.length - tailGroups.length;
  const all =
    tail === undefined ? headGroups : [...headGroups, ...Array<string>(missing).fill('0'), ...tailGroups];
  if (all.length !== 8) return undefined;
  return all.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}
