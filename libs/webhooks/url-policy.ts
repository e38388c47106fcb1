import { forbiddenRangeOf } from './ip-ranges.js';

/** Hosts that stand for this machine in a test or development endpoint URL. */
const LOCALHOST_NAMES = new Set(['localhost', '127.0.0.1']);

/**
 * The host name as DNS reads it: lowercase, and without the trailing dot of a fully qualified
 * name (`localhost.` is `localhost`), so the localhost rules cannot be sidestepped by spelling.
 */
function canonicalHostname(url: URL): string {
  return url.hostname.toLowerCase().replace(/\.$/, '');
}

/**
 * An allowed localhost URL (DESIGN §6): `http(s)://localhost[:port]` or `http(s)://127.0.0.1[:port]`
 * while WEBHOOK_ALLOW_LOCALHOST is true. Only such a URL may be delivered to a loopback address.
 */
export function isAllowedLocalhostUrl(url: URL, allowLocalhost: boolean): boolean {
  return allowLocalhost && LOCALHOST_NAMES.has(canonicalHostname(url));
}

/**
 * Why `raw` cannot be an endpoint URL, or undefined when it can: https, or http to localhost
 * while allowed; no credentials in the URL; no literal address that the delivery-time guard
 * would refuse anyway (a host name is checked when it is resolved, at each delivery).
 */
export function endpointUrlProblem(raw: string, allowLocalhost: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'Must be an absolute URL.';
  }
  const localhostAllowed = isAllowedLocalhostUrl(url, allowLocalhost);
  const onlyHttps = allowLocalhost
    ? 'Must use https (http only for http://localhost or http://127.0.0.1).'
    : 'Must use https.';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && localhostAllowed)) return onlyHttps;
  if (url.username || url.password) return 'Must not contain credentials; the signature authenticates.';
  // Port 0 cannot be connected to: every delivery would fail.
  if (url.port === '0') return 'Must not use port 0.';
  if (localhostAllowed) return undefined;
  const host = canonicalHostname(url);
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return 'Must not point to this machine (localhost URLs are not allowed here).';
  }
  const literal = host.replace(/^\[|\]$/g, '');
  if (/^[\d.]+$/.test(literal) || literal.includes(':')) {
    const range = forbiddenRangeOf(literal);
    if (range) return `Must not point to a ${range} address.`;
  }
  return undefined;
}
