import { formatMoney, parseMoney } from '../money/index.js';
import type { InvoiceTransaction } from '../schemas/index.js';

/**
 * The webhook payload `data` of each emitted event (DESIGN §6 "Event payload data"), built in one
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
