import { forbiddenRangeOf, isLoopbackAddress } from './ip-ranges.js';

/**
 * The host as the policy reads it: WHATWG-parsed (lowercase, IPv4 in dotted form whatever its
 * spelling, IPv6 compressed), without the brackets of an IPv6 literal and without the trailing dot
 * of a fully qualified name (`localhost.` is `localhost`).
 */
function policyHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

/**
 * Whether the URL's host is this machine: the name `localhost` or a loopback address literal
 * (127.0.0.0/8, ::1, ::ffff:127.x). One rule for every spelling: the WHATWG parser has already
 * turned `2130706433`, `0x7f000001`, `127.1` or `LOCALHOST` into `127.0.0.1` or `localhost`.
 */
function namesThisMachine(url: URL): boolean {
  const host = policyHost(url);
  return host === 'localhost' || isLoopbackAddress(host);
}

/**
 * An allowed localhost URL (docs/architecture.md, "Rules of the contract"): http(s) to this machine while WEBHOOK_ALLOW_LOCALHOST is
 * true. Only such a URL may be delivered to a loopback address.
 */
export function isAllowedLocalhostUrl(url: URL, allowLocalhost: boolean): boolean {
  return allowLocalhost && namesThisMachine(url);
}

export type EndpointUrlJudgement = { accepted: true; url: string } | { accepted: false; problem: string };

/**
 * Judges an endpoint URL on its WHATWG-normalized form, and gives that form to store: https, or
 * http to this machine while allowed; no credentials; no literal address that the delivery-time
 * guard would refuse anyway (a host name is checked when it is resolved, at each delivery).
 * `localhost.` is stored as `localhost`: the resolver does not find the former.
 */
export function judgeEndpointUrl(raw: string, allowLocalhost: boolean): EndpointUrlJudgement {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { accepted: false, problem: 'Must be an absolute URL.' };
  }
  const problem = problemOf(url, allowLocalhost);
  if (problem) return { accepted: false, problem };
  if (policyHost(url) === 'localhost') url.hostname = 'localhost';
  return { accepted: true, url: url.href };
}

function problemOf(url: URL, allowLocalhost: boolean): string | undefined {
  const localhostAllowed = isAllowedLocalhostUrl(url, allowLocalhost);
  const onlyHttps = allowLocalhost
    ? 'Must use https (http only for localhost or a loopback address such as 127.0.0.1).'
    : 'Must use https.';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && localhostAllowed)) return onlyHttps;
  if (url.username || url.password) return 'Must not contain credentials; the signature authenticates.';
  // Port 0 cannot be connected to: every delivery would fail.
  if (url.port === '0') return 'Must not use port 0.';
  if (localhostAllowed) return undefined;
  const host = policyHost(url);
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return 'Must not point to this machine (localhost URLs are not allowed here).';
  }
  if (/^[\d.]+$/.test(host) || host.includes(':')) {
    const range = forbiddenRangeOf(host);
    if (range) return `Must not point to a ${range} address.`;
  }
  return undefined;
}
