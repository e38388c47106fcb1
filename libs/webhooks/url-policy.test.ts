import { describe, expect, it } from 'vitest';
import { endpointUrlProblem, isAllowedLocalhostUrl } from './url-policy.js';

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

  it('refuses text that is not an absolute URL', () => {
    expect(endpointUrlProblem('example.com/hook', true)).toBe('Must be an absolute URL.');
    expect(endpointUrlProblem('', true)).toBe('Must be an absolute URL.');
  });

  it('refuses credentials in the URL', () => {
    expect(endpointUrlProblem('https://user:pass@example.com/', true)).toMatch(/credentials/);
  });

  it('refuses literal private, loopback and link-local addresses, however they are spelled', () => {
    expect(endpointUrlProblem('https://10.0.0.1/', true)).toMatch(/private/);
    expect(endpointUrlProblem('https://169.254.169.254/latest/meta-data', true)).toMatch(/link-local/);
    expect(endpointUrlProblem('https://[::1]/', true)).toMatch(/loopback/);
    expect(endpointUrlProblem('https://[::ffff:192.168.0.1]/', true)).toMatch(/private/);
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

describe('isAllowedLocalhostUrl', () => {
  it('is true for localhost and 127.0.0.1 while allowed, never for other loopback spellings', () => {
    expect(isAllowedLocalhostUrl(new URL('http://localhost:1/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('https://127.0.0.1/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://127.0.0.1/'), false)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://[::1]/'), true)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://127.0.0.2/'), true)).toBe(false);
    expect(isAllowedLocalhostUrl(new URL('http://localhost.:1/'), true)).toBe(true);
    expect(isAllowedLocalhostUrl(new URL('http://localhost.:1/'), false)).toBe(false);
  });
});
