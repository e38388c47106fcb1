import { describe, expect, it } from 'vitest';
import { endpointReceives, isKnownSelector, normalizeSelectors } from './event-matching.js';

describe('endpointReceives', () => {
  it('matches an exact event name', () => {
    expect(endpointReceives(['invoice.paid'], 'invoice.paid')).toBe(true);
    expect(endpointReceives(['invoice.paid'], 'invoice.posted')).toBe(false);
  });

  it('matches every event of a family through its wildcard', () => {
    expect(endpointReceives(['invoice.*'], 'invoice.paid')).toBe(true);
    expect(endpointReceives(['invoice.*'], 'invoice.payment_failed')).toBe(true);
    expect(endpointReceives(['invoice.*'], 'subscription.created')).toBe(false);
    expect(endpointReceives(['payment.*', 'subscription.canceled'], 'subscription.canceled')).toBe(true);
  });

  it('does not treat a wildcard as a prefix of another family', () => {
    expect(endpointReceives(['invoice.*'], 'invoices.paid')).toBe(false);
    expect(endpointReceives(['order.*'], 'order')).toBe(false);
    expect(endpointReceives(['*'], 'invoice.paid')).toBe(false);
  });

  it('gives a type with nothing before its dot no family, so no `.*` selector receives it', () => {
    expect(endpointReceives(['.*'], '.paid')).toBe(false);
    expect(endpointReceives(['.paid'], '.paid')).toBe(true);
  });

  it('gives a type without a dot no family: its name cut short is no selector of it', () => {
    expect(endpointReceives(['orde.*'], 'order')).toBe(false);
    expect(endpointReceives(['invoic.*'], 'invoice')).toBe(false);
    expect(endpointReceives(['order'], 'order')).toBe(true);
  });

  it('gives a type without a dot no family at all, not even one spelled `undefined`', () => {
    expect(endpointReceives(['undefined.*'], 'order')).toBe(false);
    expect(endpointReceives(['undefined.*'], 'undefined.x')).toBe(true);
  });
});

describe('isKnownSelector', () => {
  it('knows every event name and family wildcard of the spec, and nothing else', () => {
    for (const selector of ['invoice.posted', 'customer.updated', 'order.*', 'payment.*']) {
      expect(isKnownSelector(selector)).toBe(true);
    }
    for (const selector of ['*', 'invoice', 'invoice.', 'invoice.deleted', 'refund.*', 'INVOICE.PAID']) {
      expect(isKnownSelector(selector)).toBe(false);
    }
  });
});

describe('normalizeSelectors', () => {
  it('drops repeats and keeps the order', () => {
    expect(normalizeSelectors(['invoice.paid', 'invoice.*', 'invoice.paid'])).toEqual([
      'invoice.paid',
      'invoice.*',
    ]);
  });
});
