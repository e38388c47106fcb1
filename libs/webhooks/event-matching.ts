import { EVENT_TYPES, EVENT_WILDCARDS } from '../schemas/index.js';

/**
 * Whether an endpoint subscribed to `selectors` receives an event of `eventType`: an exact name,
 * or its family wildcard (`invoice.*` for `invoice.paid`). Nothing else matches: no `*`, no
 * prefixes, so an endpoint never receives a family it did not name.
 */
export function endpointReceives(selectors: readonly string[], eventType: string): boolean {
  // indexOf is -1 without a dot, and slice(0, -1) would make `orde` the family of `order`
  const dot = eventType.indexOf('.');
  const family = dot > 0 ? eventType.slice(0, dot) : undefined;
  return selectors.some(
    (selector) => selector === eventType || (family !== undefined && selector === `${family}.*`),
  );
}

const KNOWN_SELECTORS: ReadonlySet<string> = new Set([...EVENT_TYPES, ...EVENT_WILDCARDS]);

export function isKnownSelector(selector: string): boolean {
  return KNOWN_SELECTORS.has(selector);
}

/** The selectors in their given order, without repeats (an endpoint stores each once). */
export function normalizeSelectors(selectors: readonly string[]): string[] {
  return [...new Set(selectors)];
}
