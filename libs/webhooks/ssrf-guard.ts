import { lookup as dnsLookup } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { forbiddenRangeOf } from './ip-ranges.js';
import { isAllowedLocalhostUrl } from './url-policy.js';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (the system resolver unless a test maps names). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: HostResolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

/** A delivery the guard stopped before any connection was made. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_WEBHOOK_ADDRESS_REFUSED';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
  ) {
    super(
      host === address
        ? `Refused: ${address} is a ${range} address; webhooks are delivered to public addresses only.`
        : // without the address: the tenant reads this, and must not learn how internal names resolve
          `Refused: ${host} resolves to a ${range} address; webhooks are delivered to public addresses only.`,
    );
    this.name = 'AddressRefusedError';
  }
}

/**
 * Checks the address a delivery would connect to. A loopback address is allowed only for an
 * allowed localhost URL (WEBHOOK_ALLOW_LOCALHOST); every other private, link-local, CGNAT,
 * multicast, reserved or unspecified address is refused.
 */
export function refusalFor(
  url: URL,
  address: string,
  allowLocalhost: boolean,
): AddressRefusedError | undefined {
  const range = forbiddenRangeOf(address);
  if (!range) return undefined;
  if (range === 'loopback' && isAllowedLocalhostUrl(url, allowLocalhost)) return undefined;
  return new AddressRefusedError(url.hostname.replace(/^\[|\]$/g, ''), address, range);
}

/** For a URL whose host is an IP literal: the socket connects to it without any lookup. */
export function literalAddressOf(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) ? host : undefined;
}

/**
 * The `lookup` given to the HTTP request: it resolves the name and checks every address before
 * the socket connects, so the address checked is the address used (no second lookup that a
 * rebinding DNS server could answer differently). One forbidden address refuses the whole name.
 */
export function guardedLookup(url: URL, allowLocalhost: boolean, resolveHost: HostResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolveHost(hostname).then(
      (all) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const addresses = family ? all.filter((a) => a.family === family) : all;
        for (const { address } of addresses) {
          const refusal = refusalFor(url, address, allowLocalhost);
          if (refusal) return callback(refusal, '', 0);
        }
        const first = addresses[0];
        if (!first) {
          const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          error.code = 'ENOTFOUND';
          return callback(error, '', 0);
        }
        if (options.all) return callback(null, addresses);
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
