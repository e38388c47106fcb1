import type { FastifyRequest } from 'fastify';

/** host[:port] as a URL may carry it: a DNS name or IPv4 address, or a bracketed IPv6 address. */
const URL_HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** scheme://host[:port] clients reach us at: PUBLIC_BASE_URL when set, else what the request used. */
export function baseUrlOf(request: FastifyRequest): string {
  const configured = request.server.deps.publicBaseUrl;
  if (configured) return configured.replace(/\/+$/, '');
  // A request without a Host header (HTTP/1.0) or with one no URL can hold would make
  // `http:///api/...` or echo the header's text into the links: the address it reached is used.
  const host = URL_HOST.test(request.host) ? request.host : localAddressOf(request);
  return `${request.protocol}://${host}`;
}

function localAddressOf(request: FastifyRequest): string {
  const { localAddress, localPort } = request.socket;
  if (!localAddress) return 'localhost';
  const address = localAddress.includes(':') ? `[${localAddress}]` : localAddress;
  return localPort ? `${address}:${localPort}` : address;
}

/** Base of the links to pages for people (portal, hosted invoices): PUBLIC_URL, else the api's own. */
export function pagesBaseUrlOf(request: FastifyRequest): string {
  const configured = request.server.deps.publicUrl;
  return configured ? configured.replace(/\/+$/, '') : baseUrlOf(request);
}
