import crypto, { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { hostedInvoiceToken, invoiceIdOfHostedToken, isHostedTokenOf } from './hosted-link.js';

const invoiceId = '7d1f4a0e-2b9c-4c55-9d0e-1a2b3c4d5e6f';
const key = Buffer.alloc(32, 7);
const idBytes = Buffer.from(invoiceId.replace(/-/g, ''), 'hex');

afterEach(() => vi.restoreAllMocks());

describe('hosted invoice links', () => {
  it('checks a token in constant time', () => {
    const compare = vi.spyOn(crypto, 'timingSafeEqual');
    const token = hostedInvoiceToken(invoiceId, { key, generation: 1 });
    expect(isHostedTokenOf(token, { key, generation: 1 })).toBe(true);
    expect(compare).toHaveBeenCalledTimes(1);
  });

  it('signs the id alone at generation 0, so links made before any rotation still open', () => {
    // libs/invoices/hosted-link.ts: generation 0 signs the id alone, as links always were
    const mac = createHmac('sha256', key).update('hosted-invoice\0').update(idBytes).digest();
    const token = `hinv_${Buffer.concat([idBytes, mac]).toString('base64url')}`;
    expect(hostedInvoiceToken(invoiceId, { key, generation: 0 })).toBe(token);
    expect(isHostedTokenOf(token, { key, generation: 0 })).toBe(true);
    expect(isHostedTokenOf(token, { key, generation: 1 })).toBe(false);
  });

  it('signs a rotated link with its generation after a NUL, so a link keeps its bytes across releases', () => {
    const mac = createHmac('sha256', key).update('hosted-invoice\0').update(idBytes).update('\x002').digest();
    const token = `hinv_${Buffer.concat([idBytes, mac]).toString('base64url')}`;
    expect(hostedInvoiceToken(invoiceId, { key, generation: 2 })).toBe(token);
    expect(isHostedTokenOf(token, { key, generation: 2 })).toBe(true);
    expect(isHostedTokenOf(token, { key, generation: 1 })).toBe(false);
    expect(isHostedTokenOf(token, { key: Buffer.alloc(32, 8), generation: 2 })).toBe(false);
  });

  it('names its invoice, and a token of another length or alphabet names none', () => {
    const token = hostedInvoiceToken(invoiceId, { key, generation: 2 });
    expect(token).toMatch(/^hinv_[A-Za-z0-9_-]{64}$/);
    expect(invoiceIdOfHostedToken(token)).toBe(invoiceId);
    expect(invoiceIdOfHostedToken(`${token}A`)).toBeUndefined();
    expect(invoiceIdOfHostedToken(token.slice(0, -1))).toBeUndefined();
    expect(invoiceIdOfHostedToken(`${token.slice(0, -1)}=`)).toBeUndefined();
    expect(isHostedTokenOf(`${token}A`, { key, generation: 2 })).toBe(false);
  });
});
