import { describe, expect, it } from 'vitest';
import { forbiddenRangeOf, isLoopbackAddress } from './ip-ranges.js';

describe('forbiddenRangeOf', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.1.10', 'private'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['127.0.0.1', 'loopback'],
    ['127.8.9.10', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.5', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['192.0.0.8', 'reserved'],
    // the last address of each range wider than a /16 or /24, so the whole prefix counts
    ['198.19.255.255', 'reserved'],
    ['192.88.99.1', 'reserved'],
  ])('refuses IPv4 %s as %s', (address, range) => {
    expect(forbiddenRangeOf(address)).toBe(range);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '169.253.255.255',
    '192.169.0.1',
    '223.255.255.255',
    // the first address past each range whose prefix one bit shorter would still cover it
    '9.255.255.255',
    '11.0.0.0',
    '198.17.255.255',
    '198.20.0.0',
  ])('accepts public IPv4 %s', (address) => {
    expect(forbiddenRangeOf(address)).toBeUndefined();
  });

  it.each([
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf:ffff::1', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001:0:4136:e378::1', 'reserved'],
    ['100::1', 'reserved'],
    ['::a00:1', 'reserved'],
    ['64:ff9b:1::1', 'reserved'],
    ['2001:1ff:ffff::1', 'reserved'],
    ['3fff:fff::1', 'reserved'],
    ['5f00:1234::1', 'reserved'],
    ['ffff::1', 'multicast'],
  ])('refuses IPv6 %s as %s', (address, range) => {
    expect(forbiddenRangeOf(address)).toBe(range);
  });

  // A prefix one bit too long still holds the first addresses of its range: only the last
  // address of each range shows that the whole range is refused.
  it.each([
    ['0.255.255.255', 'unspecified'],
    ['127.255.255.255', 'loopback'],
    ['169.254.255.255', 'link-local'],
    ['192.0.0.255', 'reserved'],
    ['192.0.2.255', 'reserved'],
    ['192.88.99.255', 'reserved'],
    ['192.168.255.255', 'private'],
    ['198.51.100.255', 'reserved'],
    ['203.0.113.255', 'reserved'],
    ['64:ff9b:1:ffff:ffff:ffff:ffff:ffff', 'reserved'],
    ['100::ffff:ffff:ffff:ffff', 'reserved'],
    ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
    ['5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
    ['ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
    ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private'],
    ['feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private'],
    ['::ffff:192.168.255.255', 'private'],
  ])('refuses %s, the last address of its range, as %s', (address, range) => {
    expect(forbiddenRangeOf(address)).toBe(range);
  });

  it.each([
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '2001:4860:4860::8888',
    '2001:200::1',
    // just past 3fff::/20, the documentation range
    '3fff:1000::1',
  ])('accepts public IPv6 %s', (address) => {
    expect(forbiddenRangeOf(address)).toBeUndefined();
  });

  it('checks the IPv4 address inside IPv4-mapped, NAT64 and 6to4 IPv6 addresses', () => {
    expect(forbiddenRangeOf('::ffff:10.0.0.1')).toBe('private');
    expect(forbiddenRangeOf('::ffff:127.0.0.1')).toBe('loopback');
    expect(forbiddenRangeOf('::ffff:a9fe:a9fe')).toBe('link-local');
    expect(forbiddenRangeOf('::FFFF:192.168.0.1')).toBe('private');
    expect(forbiddenRangeOf('[::ffff:169.254.169.254]')).toBe('link-local');
    expect(forbiddenRangeOf('64:ff9b::10.1.2.3')).toBe('private');
    expect(forbiddenRangeOf('2002:0a00:0001::1')).toBe('private');
    expect(forbiddenRangeOf('2002:7f00:1::')).toBe('loopback');
    expect(forbiddenRangeOf('::ffff:8.8.8.8')).toBeUndefined();
    expect(forbiddenRangeOf('64:ff9b::8.8.4.4')).toBeUndefined();
    expect(forbiddenRangeOf('2002:0808:0808::1')).toBeUndefined();
  });

  it('treats anything that is not an IP literal as unusable', () => {
    expect(forbiddenRangeOf('example.com')).toBe('reserved');
    expect(forbiddenRangeOf('10.0.0')).toBe('reserved');
    expect(forbiddenRangeOf('')).toBe('reserved');
  });

  it('names the range of a scoped IPv6 address by its address, its zone left aside', () => {
    expect(forbiddenRangeOf('fe80::1%eth0')).toBe('link-local');
    expect(forbiddenRangeOf('[fe80::1%25en0]')).toBe('link-local');
    expect(forbiddenRangeOf('fd00::1%2')).toBe('private');
    // the zone right after `::` and after a dotted IPv4 part: no group is read from it
    expect(forbiddenRangeOf('fe80::%eth0')).toBe('link-local');
    expect(forbiddenRangeOf('::ffff:10.0.0.1%eth0')).toBe('private');
    expect(forbiddenRangeOf('::ffff:8.8.8.8%eth0')).toBeUndefined();
  });
});

describe('isLoopbackAddress', () => {
  it('is true for 127.0.0.0/8, ::1 and their IPv4-mapped forms only', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.255.254',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
    ]) {
      expect(isLoopbackAddress(address), address).toBe(true);
    }
    for (const address of [
      '128.0.0.1',
      '0.0.0.0',
      '::',
      '::2',
      '::7f00:1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::',
      'localhost',
    ]) {
      expect(isLoopbackAddress(address), address).toBe(false);
    }
  });
});
