import { formatMoney, parseMoney, roundToMinorUnit } from '../../money/index.js';
import type { TaxType } from '../../schemas/index.js';
import { computeTax, federalGstOfSubtotal, type TaxRule } from '../tax/index.js';

/**
 * The tax a credit note gives back (docs/decisions.md, "Credit notes"): the invoice's tax is
 * reversed component by component on the note's subtotal, each component rounded half-up to the
 * minor unit as the invoice rounded it. Pure.
 */

export interface TaxComponentAmount {
  name: string;
  jurisdiction: string | null;
  /** The rate the invoice charged; null when it is not known (then the note takes its share). */
  rate: string | null;
  amount: string;
}

export interface InvoiceTaxFacts {
  subtotal: string;
  tax_amount: string;
  currency: string;
  /** The items' tax type (every line of an invoice has its customer's one rule). */
  taxType: TaxType | null;
}

/**
 * The invoice's tax by component. The rule of the customer's destination on the invoice date is
 * the invoice's when it names the same tax type and gives the same tax on its subtotal (the
 * invoice was computed so); otherwise (the customer moved, an invoice from before payable amounts)
 * the stored tax is split as the printed invoice splits it: GST recomputed, the province the rest.
 */
export function invoiceTaxComponents(
  invoice: InvoiceTaxFacts,
  rule: TaxRule | undefined,
): TaxComponentAmount[] {
  const tax = parseMoney(invoice.tax_amount);
  if (tax === 0n) return [];
  if (rule && rule.taxType === invoice.taxType) {
    const computed = computeTax(rule, invoice.subtotal, invoice.currency);
    if (parseMoney(computed.amount) === tax) {
      return computed.lines.map((line) => ({
        name: line.name,
        jurisdiction: line.jurisdiction,
        rate: line.rate,
        amount: line.amount,
      }));
    }
  }
  const single = (name: string): TaxComponentAmount[] => [
    { name, jurisdiction: null, rate: null, amount: formatMoney(tax) },
  ];
  switch (invoice.taxType) {
    case 'GST_QST':
    case 'GST_PST': {
      const gst = parseMoney(federalGstOfSubtotal(invoice.subtotal, invoice.currency));
      const provincial = invoice.taxType === 'GST_QST' ? 'QST' : 'PST';
      return [
        { name: 'GST', jurisdiction: 'CA', rate: null, amount: formatMoney(gst) },
        { name: provincial, jurisdiction: null, rate: null, amount: formatMoney(tax - gst) },
      ];
    }
    case 'GST':
    case 'HST':
      return single(invoice.taxType);
    case 'US_SALES_TAX':
      return single('STATE_SALES_TAX');
    default:
      return single('TAX');
  }
}

export interface NoteTaxInput {
  components: readonly TaxComponentAmount[];
  invoiceSubtotal: bigint;
  currency: string;
  /** This note's subtotal. */
  subtotal: bigint;
  /** What earlier notes of the invoice credited: their subtotals, and their tax by component name. */
  creditedBefore: { subtotal: bigint; tax: ReadonlyMap<string, bigint> };
}

/**
 * Each component on the note's subtotal: at its rate (half-up to the minor unit), or, rate
 * unknown, its share of the invoice's component. Never more than the component has left after
 * earlier notes; the note that credits the whole subtotal takes exactly what is left, so the notes
 * of an invoice credited in full give back exactly its tax.
 */
export function noteTax(input: NoteTaxInput): { lines: TaxComponentAmount[]; amount: bigint } {
  const last = input.creditedBefore.subtotal + input.subtotal >= input.invoiceSubtotal;
  let amount = 0n;
  const lines = input.components.map((component) => {
    const charged = parseMoney(component.amount);
    const left = charged - (input.creditedBefore.tax.get(component.name) ?? 0n);
    let reversed: bigint;
    if (last) reversed = left;
    else if (component.rate !== null) {
      const rule: TaxRule = {
        taxType: null,
        components: [
          { name: component.name, jurisdiction: component.jurisdiction ?? '', rate: component.rate },
        ],
        rate: component.rate,
        note: '',
      };
      reversed = parseMoney(computeTax(rule, formatMoney(input.subtotal), input.currency).amount);
    } else if (input.invoiceSubtotal <= 0n) reversed = 0n;
    else {
      reversed = roundToMinorUnit(charged, input.currency, {
        numerator: input.subtotal,
        denominator: input.invoiceSubtotal,
      });
    }
    if (reversed > left) reversed = left;
    if (reversed < 0n) reversed = 0n;
    amount += reversed;
    return { ...component, amount: formatMoney(reversed) };
  });
  return { lines, amount };
}
