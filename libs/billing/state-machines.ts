import { ApiError } from '../errors/index.js';
import type { InvoiceStatus, SubscriptionStatus } from '../schemas/index.js';

/**
 * The two state machines of DESIGN §6. Every status change in the code base goes through
 * `assert...Transition`, so a move the table does not list is refused (409 CONFLICT) whatever
 * path asks for it: console, billing run or seed.
 */

export const SUBSCRIPTION_TRANSITIONS: Readonly<Record<SubscriptionStatus, readonly SubscriptionStatus[]>> = {
  pending: ['trialing', 'active'],
  trialing: ['active', 'canceled', 'expired'],
  active: ['past_due', 'paused', 'canceled', 'expired'],
  past_due: ['active', 'unpaid', 'canceled'],
  unpaid: ['active', 'canceled'],
  paused: ['active', 'canceled'],
  canceled: [],
  expired: [],
};

export const INVOICE_TRANSITIONS: Readonly<Record<InvoiceStatus, readonly InvoiceStatus[]>> = {
  DRAFT: ['POSTED', 'WITHDRAWN'],
  POSTED: ['PARTIALLY_PAID', 'PAID', 'WITHDRAWN'],
  PARTIALLY_PAID: ['PAID', 'PARTIALLY_REFUNDED', 'REFUNDED'],
  PAID: ['PARTIALLY_REFUNDED', 'REFUNDED'],
  PARTIALLY_REFUNDED: ['REFUNDED'],
  WITHDRAWN: [],
  REFUNDED: [],
};

export function canMoveSubscription(from: SubscriptionStatus, to: SubscriptionStatus): boolean {
  return SUBSCRIPTION_TRANSITIONS[from].includes(to);
}

export function canMoveInvoice(from: InvoiceStatus, to: InvoiceStatus): boolean {
  return INVOICE_TRANSITIONS[from].includes(to);
}

export function assertSubscriptionTransition(
  subscriptionId: number,
  from: SubscriptionStatus,
  to: SubscriptionStatus,
): void {
  if (canMoveSubscription(from, to)) return;
  const allowed = SUBSCRIPTION_TRANSITIONS[from];
  throw ApiError.conflict(
    `Subscription ${subscriptionId} is ${from} and cannot become ${to}` +
      (allowed.length ? ` (from ${from} it may become ${allowed.join(' or ')}).` : ` (${from} is final).`),
  );
}

/**
 * `label` names the invoice in the message (its number). Staying in the same status is not a
 * move: a second partial payment keeps an invoice PARTIALLY_PAID.
 */
export function assertInvoiceTransition(label: string, from: InvoiceStatus, to: InvoiceStatus): void {
  if (from === to || canMoveInvoice(from, to)) return;
  const allowed = INVOICE_TRANSITIONS[from];
  throw ApiError.conflict(
    `Invoice ${label} is ${from} and cannot become ${to}` +
      (allowed.length ? ` (from ${from} it may become ${allowed.join(' or ')}).` : ` (${from} is final).`),
  );
}
