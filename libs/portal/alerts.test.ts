import crypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isPortalCsrfToken, portalCsrfToken } from './alerts.js';

afterEach(() => vi.restoreAllMocks());

const session = `pst_${'a'.repeat(43)}`;
const another = `pst_${'b'.repeat(43)}`;

describe('the portal CSRF token', () => {
  it("is this session's alone: empty, other types, another session's or one character off are refused", () => {
    const token = portalCsrfToken(session);
    expect(isPortalCsrfToken(session, token)).toBe(true);
    expect(portalCsrfToken(another)).not.toBe(token);
    for (const given of [
      '',
      undefined,
      null,
      [token],
      portalCsrfToken(another),
      token.slice(0, -1),
      `${token}=`,
      `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
    ]) {
      expect(isPortalCsrfToken(session, given), JSON.stringify(given)).toBe(false);
    }
  });

  it('is compared in constant time, not with ===', () => {
    // whether the comparison is constant time shows in no answer, only in which function compares
    const compare = vi.spyOn(crypto, 'timingSafeEqual');
    const token = portalCsrfToken(session);
    expect(isPortalCsrfToken(session, `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)).toBe(false);
    expect(isPortalCsrfToken(session, token)).toBe(true);
    expect(compare).toHaveBeenCalledTimes(2);
  });
});
