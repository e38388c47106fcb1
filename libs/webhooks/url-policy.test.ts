import { describe, expect, it } from 'vitest';
import { isAllowedLocalhostUrl, judgeEndpointUrl } from './url-policy.js';

/** Why `raw` is refused, or undefined when it is accepted (the judgement's problem). */
function endpointUrlProblem(raw: string, allowLocalhost: boolean): string | undefined {
  const judgement = judgeEndpointUrl(raw, allowLocalhost);
  return judgement.accepted ? undefined : judgement.problem;
}

describe('endpointUrlProblem', () => {
  it('accepts https URLs with any port, path and query', () => {
    for (const url of [
      'https://hooks.example.com/billing',
      'https://example.com:8443/x?y=1',
      'https://8.8.8.8/hook',
      'https://[2606:4700:4700::1111]/hook',
    ]) {
      expect(endpointUrlProblem(url, false), url).toBeUndefined();
      expect(endpointUrlProblem(url, true), url).toBeUndefined();
    }
  });

  it('accepts http://localhost and http://127.0.0.1 (with a port) only while allowed', () => {
    for (const url of [
      'http://localhost:3000/hook',
      'http://127.0.0.1:9999/',
      'http://localhost/',
      'http://LOCALHOST/x',
    ]) {
      expect(endpointUrlProblem(url, true), url).toBeUndefined();
      expect(endpointUrlProblem(url, false), url).toMatch(/https/);
    }
  });

  it('refuses http to any other host, and other schemes', () => {
    expect(endpointUrlProblem('http://example.com/hook', true)).toMatch(/https/);
    expect(endpointUrlProblem('http://10.0.0.1/hook', true)).toMatch(/https/);
    expect(endpointUrlProblem('ftp://example.com/', true)).toMatch(/https/);
    expect(endpointUrlProblem('javascript:alert(1)', true)).toMatch(/https/);
  });

  it('allows only http besides https, even to this machine while localhost is allowed', () => {
    const allowedOnly = 'Must use https (http only for localhost or a loopback address such as 127.0.0.1).';
    expect(endpointUrlProblem('ftp://localhost/', true)).toBe(allowedOnly);
    expect(endpointUrlProblem('ws://127.0.0.1:8080/', true)).toBe(allowedOnly);
    expect(endpointUrlProblem('http://example.com/hook', true)).toBe(allowedOnly);
    expect(endpointUrlProblem('http://localhost/', false)).toBe('Must use https.');
  });

  it('refuses text that is not an absolute URL', () => {
    expect(endpointUrlProblem('example.com/hook', true)).toBe('Must be an absolute URL.');
    expect(endpointUrlProblem('', true)).toBe('Must be an absolute URL.');
  });

  it('refuses credentials in the URL', () => {
    expect(endpointUrlProblem('https://user:pass@example.com/', true)).toMatch(/credentials/);
    // a password alone, or a user name alone, is a credential too
    expect(endpointUrlProblem('https://:pass@example.com/', true)).toMatch(/credentials/);
    expect(endpointUrlProblem('https://user@example.com/', true)).toMatch(/credentials/);
  });

  it('refuses literal private, loopback and link-local addresses, however they are spelled', () => {
    expect(endpointUrlProblem('https://10.0.0.1/', true)).toMatch(/private/);
    expect(endpointUrlProblem('https://169.254.169.254/latest/meta-data', true)).toMatch(/link-local/);
    expect(endpointUrlProblem('https://[::1]/', false)).toMatch(/loopback/);
    expect(endpointUrlProblem('https://[::ffff:192.168.0.1]/', true)).toMatch(/private/);
    // NAT64 of a loopback address goes to a gateway, not to this machine
    expect(endpointUrlProblem('https://[64:ff9b::7f00:1]/', true)).toMatch(/loopback/);
    // the unspecified address reaches this machine on Linux, but is no loopback address
    expect(endpointUrlProblem('https://0/', true)).toMatch(/unspecified/);
    expect(endpointUrlProblem('https://[::]/', true)).toMatch(/unspecified/);
    // WHATWG URL parsing turns these spellings into 127.0.0.1 / 10.0.0.1
    expect(endpointUrlProblem('https://2130706433/', false)).toMatch(/loopback/);
    expect(endpointUrlProblem('https://0x0a.0.0.1/', false)).toMatch(/private/);
    expect(endpointUrlProblem('https://127.0.0.1/', false)).toMatch(/loopback/);
    expect(endpointUrlProblem('https://localhost/', false)).toMatch(/this machine/);
    expect(endpointUrlProblem('https://api.localhost/', true)).toMatch(/this machine/);
    expect(endpointUrlProblem('https://localhost./', false)).toMatch(/this machine/);
    expect(endpointUrlProblem('https://api.localhost./', true)).toMatch(/this machine/);
  });

  it('refuses port 0, which no delivery can connect to', () => {
    expect(endpointUrlProblem('https://hooks.example.com:0/x', false)).toMatch(/port 0/);
    expect(endpointUrlProblem('http://localhost:0/x', true)).toMatch(/port 0/);
  });
});

describe('judgeEndpointUrl', () => {
  /** Every spelling of this machine: judged by one rule, stored in its WHATWG form. */
  const SPELLINGS: [given: string, stored: string][] = [
    ['https://2130706433:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://0x7f000001:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://127.1:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://0177.0.0.1:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://127.000.000.001:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://127.0.0.1.:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://%31%32%37.0.0.1:8443/h', 'https://127.0.0.1:8443/h'],
    ['https://127.0.0.2:8443/h', 'https://127.0.0.2:8443/h'],
    ['https://LOCALHOST:8443/h', 'https://localhost:8443/h'],
    ['https://LocalHost.:8443/h', 'https://localhost:8443/h'],
    ['https://lo%63alhost:8443/h', 'https://localhost:8443/h'],
    ['https://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54:8443/h', 'https://localhost:8443/h'],
    ['https://[::1]:8443/h', 'https://[::1]:8443/h'],
    ['https://[0:0:0:0:0:0:0:1]:8443/h', 'https://[::1]:8443/h'],
    ['https://[::ffff:127.0.0.1]:8443/h', 'https://[::ffff:7f00:1]:8443/h'],
    ['https://[::FFFF:7F00:1]:8443/h', 'https://[::ffff:7f00:1]:8443/h'],
    ['HTTP://LOCALHOST:8080/h', 'http://localhost:8080/h'],
    ['http://[::1]:8080/h', 'http://[::1]:8080/h'],
    ['http://2130706433:8080/h', 'http://127.0.0.1:8080/h'],
  ];

  it('accepts every spelling of this machine while allowed, normalized', () => {
    for (const [given, stored] of SPELLINGS) {
      expect(judgeEndpointUrl(given, true), given).toEqual({ accepted: true, url: stored });
    }
  });

  it('refuses every spelling of this machine while not allowed', () => {
    for (const [given] of SPELLINGS) {
      expect(judgeEndpointUrl(given, false), given).toMatchObject({ accepted: false });
    }
  });

  it('stores other URLs in their WHATWG form too', () => {
    expect(judgeEndpointUrl('HTTPS://Hooks.Example.COM', false)).toEqual({
      accepted: true,
      url: 'https://hooks.example.com/',
    });
    expect(judgeEndpointUrl('https://hooks.example.com:443/a/../b?x=1#f', false)).toEqual({
      accepted: true,
      url: 'https://hooks.example.com/b?x=1#f',
    });
  });

  it('refuses neighbours that are not this machine, allowed or not', () => {
    for (const url of [
      'https://api.localhost/',
      'https://[::7f00:1]/',
      'https://[64:ff9b::127.0.0.1]/',
      'http://0:8080/',
      'https://0.0.0.0/',
      'https://[::]/',
      'http://hooks.example.com/',
    ]) {
      expect(judgeEndpointUrl(url, true), url).toMatchObject({ accepted: false });
    }
  });
});

describe('isAllowedLocalhostUrl', () => {
  it('is true for the name localhost and loopback literals while allowed, by one rule', () => {
    expect(isAllowedLocalhostUrl(new URL('http://localhost:1/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('https://127.0.0.1/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://127.0.0.1/'), false)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://[::1]/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://[::1]/'), false)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://127.0.0.2/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://[::ffff:127.0.0.1]/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://[64:ff9b::7f00:1]/'), true)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://0.0.0.0/'), true)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://api.localhost/'), true)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://localhost.:1/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://localhost.:1/'), false)).toBe(false);
  });
});
