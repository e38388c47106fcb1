import { isSocketErrorCode } from '../dependency-guard/index.js';

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** Postgres refusing work while it shuts down, starts up or is out of connections. */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** What pg says when a connection cannot be had or was lost (these errors carry no code). */
const LOST_CONNECTION =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout)/;

/**
 * Postgres (or another dependency) being unreachable is an outage to wait out, a 503 with
 * Retry-After (docs/architecture.md, "Rules of the contract"), not a 500 that reads as a bug in the request or the service.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    return isSocketErrorCode(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08');
  }
  return LOST_CONNECTION.test(error.message);
}
