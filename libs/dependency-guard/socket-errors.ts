/** Socket errors of a dependency that cannot be reached, or that went away mid-request. */
const SOCKET_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** Whether an error's `code` says the connection itself failed (an outage, not a refusal). */
export function isSocketErrorCode(code: unknown): boolean {
  return typeof code === 'string' && SOCKET_ERROR_CODES.has(code);
}
