import { HORIZON_MS } from '../../schemas/index.js';

/**
 * When a usage event can have happened: ingest refuses any other timestamp (request.ts), and
 * ClickHouse's DateTime (seconds since 1970 in 32 bits) and every billing period hold all of it.
 * [EARLIEST_EVENT_MS, LATEST_EVENT_MS): up to the service's horizon.
 */
export const EARLIEST_EVENT_MS = 0;
export const LATEST_EVENT_MS = HORIZON_MS;

/**
 * A window [from, to) of event timestamps narrowed to when events can have happened, or undefined
 * when none can lie in it. Windows are derived (a period's end, the day after a date a client gave:
 * after 9999-12-31 comes year 10000), so their bounds may be beyond what a store represents; a
 * store is only ever given the narrowed one, which holds exactly the same events.
 */
export function eventTimesWithin(from: Date, to: Date): { fromMs: number; toMs: number } | undefined {
  const fromMs = Math.max(from.getTime(), EARLIEST_EVENT_MS);
  const toMs = Math.min(to.getTime(), LATEST_EVENT_MS);
  // NaN (an invalid Date) compares false: no window
  return fromMs < toMs ? { fromMs, toMs } : undefined;
}
