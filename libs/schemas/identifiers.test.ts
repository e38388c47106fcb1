import { describe, expect, it } from 'vitest';
import {
  canonicalUuid,
  isUuid,
  newRequestId,
  parseIntegerId,
  requestIdFrom,
  uuidPathId,
} from './identifiers.js';
import { uuidInput } from './primitives.js';

const GIVEN = '0F8FAD5B-D9CB-469F-A165-70867728950E';

describe('isUuid', () => {
  it('takes the 8-4-4-4-12 hexadecimal form in either case, and nothing else', () => {
    expect(isUuid(GIVEN)).toBe(true);
    expect(isUuid(GIVEN.toLowerCase())).toBe(true);
    for (const other of ['', `${GIVEN}0`, GIVEN.replaceAll('-', ''), `{${GIVEN}}`, GIVEN.replace('F', 'g')]) {
      expect(isUuid(other), other).toBe(false);
    }
  });
});

describe('canonical UUIDs', () => {
  it('spells a UUID in lower case, as Postgres prints it, and leaves anything else as it is', () => {
    expect(canonicalUuid(GIVEN)).toBe(GIVEN.toLowerCase());
    expect(canonicalUuid(GIVEN.toLowerCase())).toBe(GIVEN.toLowerCase());
    for (const other of ['nope', `${GIVEN} `, 'INV-000001']) expect(canonicalUuid(other)).toBe(other);
  });

  it('is what a path id and a query or flag UUID parse to', () => {
    expect(uuidPathId.parse(GIVEN)).toBe(GIVEN.toLowerCase());
    expect(uuidPathId.parse('not-a-uuid')).toBe('not-a-uuid');
    expect(uuidInput.parse(GIVEN)).toBe(GIVEN.toLowerCase());
    expect(uuidInput.safeParse('not-a-uuid').success).toBe(false);
  });
});

describe('requestIdFrom', () => {
  it("keeps a caller's UUID, lower-cased, and makes a fresh one for anything else", () => {
    expect(requestIdFrom(GIVEN)).toBe(GIVEN.toLowerCase());
    for (const other of [undefined, '', 'req-1', ['a', 'b'], `${GIVEN} `]) {
      const made = requestIdFrom(other);
      expect(isUuid(made)).toBe(true);
      expect(made).toBe(made.toLowerCase());
      expect(made).not.toBe(requestIdFrom(other));
    }
    expect(isUuid(newRequestId())).toBe(true);
  });
});

describe('parseIntegerId', () => {
  it('names a positive safe integer, or nothing', () => {
    expect(parseIntegerId('42')).toBe(42);
    expect(parseIntegerId(42)).toBe(42);
    // the largest safe integer has 16 digits: still an id a record can have
    expect(parseIntegerId('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseIntegerId(Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    for (const other of ['0', '042', '-1', '1.0', '9007199254740993', 0, 1.5]) {
      expect(parseIntegerId(other), String(other)).toBeUndefined();
    }
  });
});
