import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { baseUrlOf, pagesBaseUrlOf } from './public-url.js';

/** What baseUrlOf and pagesBaseUrlOf read of a request: the configured URLs, Host, scheme and socket. */
function request(
  host: string,
  socket: { localAddress?: string; localPort?: number } = { localAddress: '10.0.0.5', localPort: 8080 },
  deps: { publicBaseUrl?: string; publicUrl?: string } = {},
): FastifyRequest {
  return { host, protocol: 'http', socket, server: { deps } } as unknown as FastifyRequest;
}

describe('the base URL of links', () => {
  it('is the Host the request used, with its port, when a URL can hold it', () => {
    expect(baseUrlOf(request('billing.example:8443'))).toBe('http://billing.example:8443');
    expect(baseUrlOf(request('[2001:db8::1]:8080'))).toBe('http://[2001:db8::1]:8080');
  });

  it('is the address the request reached when Host is missing or no URL can hold it', () => {
    expect(baseUrlOf(request(''))).toBe('http://10.0.0.5:8080');
    expect(baseUrlOf(request('a"b<c>'))).toBe('http://10.0.0.5:8080');
    expect(baseUrlOf(request('evil.example/path?'))).toBe('http://10.0.0.5:8080');
    // an IPv6 address is bracketed, as a URL writes it
    expect(baseUrlOf(request('', { localAddress: '::1', localPort: 3000 }))).toBe('http://[::1]:3000');
    expect(baseUrlOf(request('', { localAddress: '10.0.0.5' }))).toBe('http://10.0.0.5');
    expect(baseUrlOf(request('', {}))).toBe('http://localhost');
  });

  it('is PUBLIC_BASE_URL when set, without trailing slashes; pages use PUBLIC_URL before it', () => {
    const configured = { publicBaseUrl: 'https://api.example.com/billing//' };
    expect(baseUrlOf(request('ignored.example', undefined, configured))).toBe(
      'https://api.example.com/billing',
    );
    expect(pagesBaseUrlOf(request('ignored.example', undefined, configured))).toBe(
      'https://api.example.com/billing',
    );
    expect(
      pagesBaseUrlOf(
        request('ignored.example', undefined, { ...configured, publicUrl: 'https://pay.example/' }),
      ),
    ).toBe('https://pay.example');
    expect(pagesBaseUrlOf(request('billing.example'))).toBe('http://billing.example');
  });
});
