import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import { INVOICE_STATUSES, SUBSCRIPTION_STATUSES } from '../../schemas/index.js';
import {
  assertInvoiceTransition,
  assertSubscriptionTransition,
  canMoveInvoice,
  canMoveSubscription,
} from './state-machines.js';

/** docs/architecture.md, "State machines" (and its documented departures), written out again independently of the implementation's table. */
const SUBSCRIPTION_LEGAL = new Set([
  'pending>trialing',
  'pending>active',
  'trialing>active',
  'trialing>canceled',
  'trialing>expired',
  'active>past_due',
  'active>paused',
  'active>canceled',
  'active>expired',
  'past_due>active',
  'past_due>unpaid',
  'past_due>canceled',
  'unpaid>active',
  'unpaid>canceled',
  'paused>active',
  'paused>canceled',
]);

const INVOICE_LEGAL = new Set([
  'DRAFT>POSTED',
  'DRAFT>WITHDRAWN',
  'POSTED>PARTIALLY_PAID',
  'POSTED>PAID',
  'POSTED>WITHDRAWN',
  'PARTIALLY_PAID>PAID',
  'PAID>PARTIALLY_REFUNDED',
  'PAID>REFUNDED',
  'PARTIALLY_PAID>PARTIALLY_REFUNDED',
  'PARTIALLY_PAID>REFUNDED',
  'PARTIALLY_REFUNDED>REFUNDED',
  // the departure of docs/decisions.md "A refund never cancels what is still owed": a refunded
  // invoice with a balance left is paid again, and moves by what is then paid
  'PARTIALLY_REFUNDED>PARTIALLY_PAID',
  'PARTIALLY_REFUNDED>PAID',
  'REFUNDED>PARTIALLY_PAID',
  'REFUNDED>PAID',
]);

const pairs = <T extends string>(states: readonly T[]) =>
  states.flatMap((from) => states.filter((to) => to !== from).map((to) => [from, to] as const));

describe('subscription state machine', () => {
  it.each(pairs(SUBSCRIPTION_STATUSES))(
    '%s -> %s is legal exactly when docs/architecture.md lists it',
    (from, to) => {
      const legal = SUBSCRIPTION_LEGAL.has(`${from}>${to}`);
      expect(canMoveSubscription(from, to)).toBe(legal);
      if (legal) {
        expect(() => assertSubscriptionTransition(7, from, to)).not.toThrow();
      } else {
        const error = (() => {
          try {
            assertSubscriptionTransition(7, from, to);
          } catch (e) {
            return e;
          }
        })();
        expect(error).toBeInstanceOf(ApiError);
        expect((error as ApiError).code).toBe('CONFLICT');
        expect((error as ApiError).message).toContain(`Subscription 7 is ${from} and cannot become ${to}`);
      }
    },
  );

  it('names the final states in the message', () => {
    expect(() => assertSubscriptionTransition(1, 'canceled', 'active')).toThrow(/canceled is final/);
    expect(() => assertSubscriptionTransition(1, 'pending', 'canceled')).toThrow(
      /may become trialing or active/,
    );
  });
});

describe('invoice state machine', () => {
  it.each(pairs(INVOICE_STATUSES))(
    '%s -> %s is legal exactly when docs/architecture.md lists it',
    (from, to) => {
      const legal = INVOICE_LEGAL.has(`${from}>${to}`);
      expect(canMoveInvoice(from, to)).toBe(legal);
      if (legal) expect(() => assertInvoiceTransition('INV-000001', from, to)).not.toThrow();
      else expect(() => assertInvoiceTransition('INV-000001', from, to)).toThrow(ApiError);
    },
  );

  it('a further partial payment or refund may keep the status; posting or withdrawing twice may not', () => {
    expect(() => assertInvoiceTransition('INV-000001', 'PARTIALLY_PAID', 'PARTIALLY_PAID')).not.toThrow();
    expect(() =>
      assertInvoiceTransition('INV-000001', 'PARTIALLY_REFUNDED', 'PARTIALLY_REFUNDED'),
    ).not.toThrow();
    for (const status of ['DRAFT', 'POSTED', 'PAID', 'WITHDRAWN', 'REFUNDED'] as const) {
      expect(() => assertInvoiceTransition('INV-000001', status, status), status).toThrow(ApiError);
    }
  });

  it('explains what is allowed instead', () => {
    expect(() => assertInvoiceTransition('INV-000009', 'PAID', 'WITHDRAWN')).toThrow(
      'Invoice INV-000009 is PAID and cannot become WITHDRAWN (from PAID it may become PARTIALLY_REFUNDED or REFUNDED).',
    );
    expect(() => assertInvoiceTransition('INV-000009', 'WITHDRAWN', 'POSTED')).toThrow(/WITHDRAWN is final/);
  });
});
