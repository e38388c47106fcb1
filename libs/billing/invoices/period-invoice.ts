import { utcDate } from '../domain/index.js';
import type { BillableItem, ProrationLine } from '../pricing/index.js';
import { taxRuleFor } from '../tax/index.js';
import { itemForPeriod } from './billable-items.js';
import { buildInvoiceLines, type InvoiceLine } from './invoice-lines.js';
import { assertBillableCurrency, composing } from './unbillable.js';

/**
 * One subscription's invoice for one ended (or running) period, before anything is written: the
 * billing run stores it, the usage read-back previews it. Both call this one pure function, so a
 * preview taken once the period has ended and no event changes equals the run's invoice to the
 * last digit.
 */

/** Where the invoice's tax is due: the customer's address and exemption. */
export interface PeriodInvoiceCustomer {
  country: string;
  state_province: string | null;
  tax_exempt: boolean;
}

export interface PeriodInvoiceInput {
  /** The subscription's items with their products' prices and tiers (loadBillableItems). */
  items: readonly BillableItem[];
  /** The subscription's currency; every item is priced in it. */
  currency: string;
  /** subscription_item_id -> the period's usage (metered items); a missing item used nothing. */
  usage: ReadonlyMap<number, string>;
  /** Whether this is the subscription's first paid period (one-time items are billed then). */
  firstPeriod: boolean;
  /** The period's start: items changed within the period are billed at the terms it began with. */
  periodStart: Date;
  /** The period's end: the invoice is dated on it and taxed with the rules of that day. */
  periodEnd: Date;
  /**
   * Lines of subscription changes waiting for this invoice (pendingProrationLines): a credit and
   * a charge per changed licensed item (docs/architecture.md, "A subscription change's way").
   */
  prorationLines: readonly ProrationLine[];
  customer: PeriodInvoiceCustomer;
  /**
   * When billing stops before `periodEnd` (an immediate cancel): the invoice is dated on this
   * instant's day and taxed with that day's rules. The items already end at it (endItemsAt).
   */
  endsAt?: Date | undefined;
}

export interface PeriodInvoice {
  /** YYYY-MM-DD, the UTC day the period ends. */
  invoice_date: string;
  lines: InvoiceLine[];
  subtotal: string;
  tax_amount: string;
  total: string;
}

/**
 * Throws UnbillableError when the stored data can never be invoiced (see composing): the billing
 * run parks the subscription, a read route answers 409.
 */
export function composePeriodInvoice(input: PeriodInvoiceInput): PeriodInvoice {
  const currency = input.currency.trim();
  assertBillableCurrency(currency);
  return composing(() => compose(input, currency));
}

function compose(input: PeriodInvoiceInput, currency: string): PeriodInvoice {
  const invoiceDate = utcDate(input.endsAt ?? input.periodEnd);
  const period = { start: input.periodStart, end: input.periodEnd };
  const items = input.items.flatMap((item) => itemForPeriod(item, period) ?? []);
  const draft = buildInvoiceLines(items, {
    prorationLines: input.prorationLines,
    currency,
    usage: input.usage,
    firstPeriod: input.firstPeriod,
    taxRule: taxRuleFor(
      {
        country: input.customer.country,
        stateProvince: input.customer.state_province,
        taxExempt: input.customer.tax_exempt,
      },
      invoiceDate,
    ),
  });
  return { invoice_date: invoiceDate, ...draft };
}
