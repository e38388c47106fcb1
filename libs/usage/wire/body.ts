import { isUtf8 } from 'node:buffer';
import { ApiError } from '../../errors/index.js';

/** Events (the root object, or an entry of a batch's `events`) whose `quantity` text a double does not hold. */
const inexactQuantities = new WeakSet<object>();

/**
 * The body of a usage request, parsed the same way by both front ends: a leading byte-order mark
 * is skipped, `__proto__` and `constructor.prototype` keys are refused (as Fastify's parser does
 * for every other route), and each event's `quantity` is checked against its text: JSON.parse
 * turns `12345678901234.12345678` into the nearest double, `12345678901234.123`, and an amount
 * must never change on its way in (quantityIsInexact tells the validation). Bytes that are not UTF-8
 * are refused rather than decoded to U+FFFD, which would make different keys one. A body sent with
 * a Content-Encoding other than identity is refused first (415). Throws ApiError 400 or 415.
 */
export function parseUsageBody(
  bytes: Buffer,
  headers: { contentEncoding?: string | undefined } = {},
): unknown {
  const encoded = ApiError.ofContentEncoding(headers.contentEncoding);
  if (encoded) throw encoded;
  if (!isUtf8(bytes)) throw ApiError.invalidUtf8();
  const text = bytes.toString('utf8');
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (json.length === 0) throw ApiError.emptyJsonBody();
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw ApiError.invalidJson();
  }
  if ((json.includes('__proto__') || json.includes('constructor')) && poisoned(parsed)) {
    throw ApiError.invalidJson();
  }
  // Only a number of 16 or more digits, or with an exponent, can lose digits: most bodies skip this.
  if (mayHoldLongNumber(json)) markInexactQuantities(json, parsed);
  return parsed;
}

/** Whether this event's `quantity` was written with more digits than its number keeps. */
export function quantityIsInexact(event: unknown): boolean {
  return typeof event === 'object' && event !== null && inexactQuantities.has(event);
}

/**
 * What `/\d[\d.]{15}|\d[eE]/` matches (a digit followed by 15 digits or dots, or a digit followed by
 * an exponent), without trying the pattern at every digit, which on a large batch cost a visible
 * share of the whole request. A run of 16 such characters
 * covers one of every 16th position, so only those are looked at (and the run around a hit); the
 * exponents are found with indexOf.
 */
export function mayHoldLongNumber(json: string): boolean {
  const length = json.length;
  for (let probe = 15; probe < length; probe += 16) {
    if (!isDigitOrDot(json.charCodeAt(probe))) continue;
    let start = probe;
    while (start > 0 && isDigitOrDot(json.charCodeAt(start - 1))) start--;
    let end = probe;
    while (end + 1 < length && isDigitOrDot(json.charCodeAt(end + 1))) end++;
    // The pattern starts at a digit: leading dots do not count.
    while (start <= end && json.charCodeAt(start) === DOT) start++;
    if (end - start >= 15) return true;
    probe = end;
  }
  for (const exponent of ['e', 'E']) {
    for (let at = json.indexOf(exponent, 1); at !== -1; at = json.indexOf(exponent, at + 1)) {
      if (isDigit(json.charCodeAt(at - 1))) return true;
    }
  }
  return false;
}

const DOT = 0x2e;
const isDigit = (code: number) => code >= 0x30 && code <= 0x39;
const isDigitOrDot = (code: number) => isDigit(code) || code === DOT;

/**
 * Whether the parsed value holds a `__proto__` key, or a `constructor` key whose value has a
 * `prototype` key, at any depth (what Fastify's parser refuses). A walk with its own stack: a
 * reviver recurses once per level and overflows on a deeply nested body.
 */
function poisoned(root: unknown): boolean {
  const pending: unknown[] = [root];
  while (pending.length) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    if (Object.hasOwn(value, '__proto__')) return true;
    const record = value as Record<string, unknown>;
    if (Object.hasOwn(value, 'constructor')) {
      const inner = record.constructor;
      if (typeof inner === 'object' && inner !== null && Object.hasOwn(inner, 'prototype')) return true;
    }
    for (const key of Object.keys(value)) pending.push(record[key]);
  }
  return false;
}

/**
 * Walks the JSON text (already known to be valid) keeping the path of keys and indices, and marks
 * each object whose last `quantity` member is a number literal that reads back differently.
 */
function markInexactQuantities(json: string, root: unknown): void {
  const path: (string | number)[] = [];
  const containers: ('object' | 'array')[] = [];
  let expectingKey = false;
  let i = 0;
  const verdicts = new Map<object, boolean>();
  while (i < json.length) {
    const c = json[i]!;
    if (c === '"') {
      const end = stringEnd(json, i);
      if (expectingKey) {
        path[path.length - 1] = JSON.parse(json.slice(i, end + 1)) as string;
        expectingKey = false;
      }
      i = end + 1;
    } else if (c === '{' || c === '[') {
      containers.push(c === '{' ? 'object' : 'array');
      path.push(c === '{' ? '' : 0);
      expectingKey = c === '{';
      i++;
    } else if (c === '}' || c === ']') {
      containers.pop();
      path.pop();
      // a value of the container around it ends here (an empty object expected a key until now)
      expectingKey = false;
      i++;
    } else if (c === ',') {
      const top = containers.length - 1;
      if (containers[top] === 'array') path[top] = (path[top] as number) + 1;
      else expectingKey = true;
      i++;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const start = i;
      while (i < json.length && /[-+\d.eE]/.test(json[i]!)) i++;
      const owner = eventOwning(root, containers, path);
      if (owner) verdicts.set(owner, !sameDecimal(json.slice(start, i)));
    } else {
      i++;
    }
  }
  for (const [event, inexact] of verdicts) if (inexact) inexactQuantities.add(event);
}

function stringEnd(json: string, start: number): number {
  let i = start + 1;
  while (json[i] !== '"') i += json[i] === '\\' ? 2 : 1;
  return i;
}

/**
 * The event whose `quantity` the walk is at: the root object (`POST /usage/events`) or an entry of
 * its `events` array (the batch route); the validation reads no other. Found in constant time,
 * whatever the body's nesting (a walk from the root per key made a deep body quadratic).
 */
function eventOwning(
  root: unknown,
  containers: readonly ('object' | 'array')[],
  path: readonly (string | number)[],
): object | undefined {
  if (path[path.length - 1] !== 'quantity' || containers[containers.length - 1] !== 'object')
    return undefined;
  let owner: unknown;
  if (path.length === 1) owner = root;
  else if (path.length === 3 && path[0] === 'events' && typeof path[1] === 'number') {
    const events = (root as { events?: unknown } | null)?.events;
    owner = Array.isArray(events) ? events[path[1]] : undefined;
  }
  return typeof owner === 'object' && owner !== null ? owner : undefined;
}

/** Whether a number literal and the shortest text of the double it parses to are the same decimal. */
function sameDecimal(literal: string): boolean {
  const value = Number(literal);
  return Number.isFinite(value) && canonical(literal) === canonical(String(value));
}

/** A decimal as `digits@exponent` without leading or trailing zeros (`0.50` and `5e-1` agree). */
function canonical(text: string): string {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?$/.exec(text);
  if (!match) return text;
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  let digits = whole + fraction;
  let scale = Number(exponent) - fraction.length;
  const leading = digits.search(/[1-9]/);
  if (leading < 0) return '0';
  digits = digits.slice(leading);
  // a loop, not /0+$/: that regex retries from every zero, quadratic on 1.000…0001
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 48) end--;
  const trailing = digits.length - end;
  digits = digits.slice(0, end);
  scale += trailing;
  return `${sign}${digits}@${scale}`;
}
