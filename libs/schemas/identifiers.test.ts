import { describe, expect, it } from 'vitest';
import { isUuid, newRequestId, parseIntegerId, requestIdFrom } from './identifiers.js';

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
    for (const other of ['0', '042', '-1', '1.0', '9007199254740993', 0, 1.5]) {
      expect(parseIntegerId(other), String(other)).toBeUndefined();
    }
  });
});
