import { formatMoney, parseMoney } from '../../money/index.js';
import type { InvoiceTransaction } from '../../schemas/index.js';
import { type ItemToShow, publicSubscriptionItem } from './subscription-item.js';

/**
 * The webhook payload `data` of each emitted event (docs/architecture.md, "Rules of the contract": event payloads), built in one
 * place so every path that emits an event sends the same shape.
 */

export function invoiceEventData(invoice: {
  id: string;
  customer_id: number;
  status: string;
  invoice_number: string;
  total: string;
  amount_paid: string;
  currency: string;
}) {
  return {
    id: invoice.id,
    object: 'invoice' as const,
    customer_id: invoice.customer_id,
    status: invoice.status,
    invoice_number: invoice.invoice_number,
    total: formatMoney(parseMoney(invoice.total)),
    balance: formatMoney(parseMoney(invoice.total) - parseMoney(invoice.amount_paid)),
    currency: invoice.currency,
  };
}

export function subscriptionEventData(subscription: { id: number; customer_id: number; status: string }) {
  return {
    id: subscription.id,
    object: 'subscription' as const,
    customer_id: subscription.customer_id,
    status: subscription.status,
  };
}

export function paymentEventData(transaction: InvoiceTransaction, customerId: number) {
  return { ...transaction, customer_id: customerId };
}

/** subscription.updated: the items before and after a change, and when it took effect. */
export function subscriptionUpdatedEventData(
  subscription: { id: number; customer_id: number; status: string },
  change: {
    before: readonly ItemToShow[];
    after: readonly ItemToShow[];
    effective_at: Date;
  },
) {
  return {
    ...subscriptionEventData(subscription),
    previous_items: change.before.map(publicSubscriptionItem),
    items: change.after.map(publicSubscriptionItem),
    effective_at: change.effective_at.toISOString(),
  };
}
