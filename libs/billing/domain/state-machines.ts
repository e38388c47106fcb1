import { ApiError } from '../../errors/index.js';
import type { InvoiceStatus, SubscriptionStatus } from '../../schemas/index.js';

/**
 * The two state machines of docs/architecture.md (the invoice's with one documented departure). Every status change in the code base goes through
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

/**
 * the invoice machine of docs/architecture.md (State machines), and one departure (docs/decisions.md "A refund never cancels what
 * is still owed"): a refunded invoice that still has a balance (a partial payment given back) takes
 * payments again, and moves by what is then paid, as a POSTED one does.
 */
export const INVOICE_TRANSITIONS: Readonly<Record<InvoiceStatus, readonly InvoiceStatus[]>> = {
  DRAFT: ['POSTED', 'WITHDRAWN'],
  POSTED: ['PARTIALLY_PAID', 'PAID', 'WITHDRAWN'],
  PARTIALLY_PAID: ['PAID', 'PARTIALLY_REFUNDED', 'REFUNDED'],
  PAID: ['PARTIALLY_REFUNDED', 'REFUNDED'],
  PARTIALLY_REFUNDED: ['REFUNDED', 'PARTIALLY_PAID', 'PAID'],
  WITHDRAWN: [],
  REFUNDED: ['PARTIALLY_PAID', 'PAID'],
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

/** Statuses a further payment or refund may keep: a second partial payment stays PARTIALLY_PAID. */
const REPEATABLE_INVOICE_STATUSES: ReadonlySet<InvoiceStatus> = new Set([
  'PARTIALLY_PAID',
  'PARTIALLY_REFUNDED',
]);

/**
 * `label` names the invoice in the message (its number). Staying PARTIALLY_PAID or
 * PARTIALLY_REFUNDED is allowed (a further partial payment or refund); any other "move" to the
 * same status, such as posting a POSTED invoice again, is refused like any unlisted move.
 */
export function assertInvoiceTransition(label: string, from: InvoiceStatus, to: InvoiceStatus): void {
  if ((from === to && REPEATABLE_INVOICE_STATUSES.has(from)) || canMoveInvoice(from, to)) return;
  const allowed = INVOICE_TRANSITIONS[from];
  throw ApiError.conflict(
    `Invoice ${label} is ${from} and cannot become ${to}` +
      (allowed.length ? ` (from ${from} it may become ${allowed.join(' or ')}).` : ` (${from} is final).`),
  );
}
