import { describe, expect, it } from 'vitest';
import { formatMoney, parseMoney } from '../../money/index.js';
import { taxRuleFor } from '../tax/index.js';
import { invoiceTaxComponents, noteTax } from './tax-reversal.js';

const qc = taxRuleFor({ country: 'CA', stateProvince: 'QC' }, '2026-02-01');
const invoice = { subtotal: '107.76', tax_amount: '16.14', currency: 'CAD', taxType: 'GST_QST' as const };
const none = { subtotal: 0n, tax: new Map<string, bigint>() };

describe('invoiceTaxComponents', () => {
  it("takes the destination's rule when it gives the invoice's tax", () => {
    expect(invoiceTaxComponents(invoice, qc)).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: '0.05', amount: '5.39000000' },
      { name: 'QST', jurisdiction: 'QC', rate: '0.09975', amount: '10.75000000' },
    ]);
  });

  it('splits the stored tax when the rule no longer matches (the customer moved)', () => {
    const on = taxRuleFor({ country: 'CA', stateProvince: 'ON' }, '2026-02-01');
    expect(invoiceTaxComponents(invoice, on)).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: null, amount: '5.39000000' },
      { name: 'QST', jurisdiction: null, rate: null, amount: '10.75000000' },
    ]);
    expect(invoiceTaxComponents({ ...invoice, tax_amount: '0' }, qc)).toEqual([]);
  });

  it('splits the stored tax when the same rule gives another tax (an invoice before payable amounts)', () => {
    // the rule gives 16.14 on 107.76; the invoice stored 16.13: GST recomputed, QST the rest, so the
    // components add up to what the invoice charged (docs/decisions.md, "Credit notes")
    expect(invoiceTaxComponents({ ...invoice, tax_amount: '16.13' }, qc)).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: null, amount: '5.39000000' },
      { name: 'QST', jurisdiction: null, rate: null, amount: '10.74000000' },
    ]);
  });

  it("splits a moved customer's stored tax by the invoice's tax type: GST + PST, one HST, one state tax", () => {
    // 100.00 in British Columbia: GST 5.00 + PST 7.00; the customer has since moved to Ontario
    const on = taxRuleFor({ country: 'CA', stateProvince: 'ON' }, '2026-02-01');
    const bc = { subtotal: '100.00', tax_amount: '12.00', currency: 'CAD', taxType: 'GST_PST' as const };
    expect(invoiceTaxComponents(bc, on)).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: null, amount: '5.00000000' },
      { name: 'PST', jurisdiction: null, rate: null, amount: '7.00000000' },
    ]);
    const single = (taxType: 'HST' | 'GST' | 'US_SALES_TAX' | null) =>
      invoiceTaxComponents({ subtotal: '100.00', tax_amount: '6.00', currency: 'CAD', taxType }, undefined);
    expect(single('HST')).toEqual([{ name: 'HST', jurisdiction: null, rate: null, amount: '6.00000000' }]);
    expect(single('GST')).toEqual([{ name: 'GST', jurisdiction: null, rate: null, amount: '6.00000000' }]);
    expect(single('US_SALES_TAX')).toEqual([
      { name: 'STATE_SALES_TAX', jurisdiction: null, rate: null, amount: '6.00000000' },
    ]);
    expect(single(null)).toEqual([{ name: 'TAX', jurisdiction: null, rate: null, amount: '6.00000000' }]);
  });

  it("takes the destination's rule only when it names the invoice's tax type, even at the same amount", () => {
    // billed in Alberta (GST 5 %), since moved to Wisconsin (state tax 5 %): the rule gives the same
    // 5.00 on 100.00, but the invoice charged GST, not a state sales tax
    const wi = taxRuleFor({ country: 'US', stateProvince: 'WI' }, '2026-02-01');
    const alberta = { subtotal: '100.00', tax_amount: '5.00', currency: 'CAD', taxType: 'GST' as const };
    expect(invoiceTaxComponents(alberta, wi)).toEqual([
      { name: 'GST', jurisdiction: null, rate: null, amount: '5.00000000' },
    ]);
  });
});

describe('noteTax', () => {
  const components = invoiceTaxComponents(invoice, qc);
  const total = (lines: { amount: string }[]) =>
    formatMoney(lines.reduce((s, l) => s + parseMoney(l.amount), 0n));

  it('rounds each component half-up on the note subtotal', () => {
    const tax = noteTax({
      components,
      invoiceSubtotal: parseMoney('107.76'),
      currency: 'CAD',
      subtotal: parseMoney('13.33'),
      creditedBefore: none,
    });
    expect(tax.lines.map((l) => l.amount)).toEqual(['0.67000000', '1.33000000']);
    expect(formatMoney(tax.amount)).toBe(total(tax.lines));
  });

  it('the note completing the subtotal takes exactly what is left; none exceeds what is left', () => {
    // 0.10 at a time: GST 0.005 -> 0.01 each, more than the invoice's share would be
    const before = {
      subtotal: parseMoney('100'),
      tax: new Map([
        ['GST', parseMoney('5.38')],
        ['QST', parseMoney('10.70')],
      ]),
    };
    const step = noteTax({
      components,
      invoiceSubtotal: parseMoney('107.76'),
      currency: 'CAD',
      subtotal: parseMoney('0.10'),
      creditedBefore: before,
    });
    expect(step.lines.map((l) => l.amount)).toEqual(['0.01000000', '0.01000000']);
    const capped = noteTax({
      components,
      invoiceSubtotal: parseMoney('107.76'),
      currency: 'CAD',
      subtotal: parseMoney('7.00'),
      creditedBefore: {
        ...before,
        tax: new Map([
          ['GST', parseMoney('5.39')],
          ['QST', parseMoney('10.70')],
        ]),
      },
    });
    expect(capped.lines.map((l) => l.amount)).toEqual(['0.00000000', '0.05000000']);
    const last = noteTax({
      components,
      invoiceSubtotal: parseMoney('107.76'),
      currency: 'CAD',
      subtotal: parseMoney('7.76'),
      creditedBefore: before,
    });
    expect(last.lines.map((l) => l.amount)).toEqual(['0.01000000', '0.05000000']);
  });

  it('the note crediting exactly the rest of the subtotal takes what is left, even above its rate', () => {
    // docs/decisions.md, "Credit notes": the notes of a fully credited invoice give back exactly its
    // tax. HST 13 % on 0.20 is 0.026 -> 0.03; two notes of 0.10 take 0.013 -> 0.01, then the rest, 0.02
    const on = taxRuleFor({ country: 'CA', stateProvince: 'ON' }, '2026-02-01');
    const small = { subtotal: '0.20', tax_amount: '0.03', currency: 'CAD', taxType: 'HST' as const };
    const hst = invoiceTaxComponents(small, on);
    expect(hst).toEqual([{ name: 'HST', jurisdiction: 'ON', rate: '0.13', amount: '0.03000000' }]);
    const first = noteTax({
      components: hst,
      invoiceSubtotal: parseMoney('0.20'),
      currency: 'CAD',
      subtotal: parseMoney('0.10'),
      creditedBefore: none,
    });
    expect(formatMoney(first.amount)).toBe('0.01000000');
    const rest = noteTax({
      components: hst,
      invoiceSubtotal: parseMoney('0.20'),
      currency: 'CAD',
      subtotal: parseMoney('0.10'),
      creditedBefore: { subtotal: parseMoney('0.10'), tax: new Map([['HST', first.amount]]) },
    });
    expect(formatMoney(rest.amount)).toBe('0.02000000');
    // one note of the whole subtotal takes the whole tax
    const whole = noteTax({
      components: hst,
      invoiceSubtotal: parseMoney('0.20'),
      currency: 'CAD',
      subtotal: parseMoney('0.20'),
      creditedBefore: none,
    });
    expect(formatMoney(whole.amount)).toBe('0.03000000');
  });

  it('without a rate, a component is shared in proportion to the subtotal', () => {
    const split = [{ name: 'HST', jurisdiction: null, rate: null, amount: '13.00' }];
    const tax = noteTax({
      components: split,
      invoiceSubtotal: parseMoney('100'),
      currency: 'JPY',
      subtotal: parseMoney('33'),
      creditedBefore: none,
    });
    expect(formatMoney(tax.amount)).toBe('4.00000000'); // 4.29 -> 4 yen
    // three decimals: 0.100 x 0.335 / 1.000 = 0.0335 -> 0.034 dinar (a half, up)
    const dinar = noteTax({
      components: [{ name: 'TAX', jurisdiction: null, rate: null, amount: '0.100' }],
      invoiceSubtotal: parseMoney('1.000'),
      currency: 'KWD',
      subtotal: parseMoney('0.335'),
      creditedBefore: none,
    });
    expect(formatMoney(dinar.amount)).toBe('0.03400000');
    // the share itself, not a hair more: 0.01 x 0.49999999 / 1.00 is just under half a cent -> 0.00
    const underHalf = noteTax({
      components: [{ name: 'HST', jurisdiction: null, rate: null, amount: '0.01' }],
      invoiceSubtotal: parseMoney('1.00'),
      currency: 'CAD',
      subtotal: parseMoney('0.49999999'),
      creditedBefore: none,
    });
    expect(formatMoney(underHalf.amount)).toBe('0.00000000');
  });

  it("rounds to the invoice currency's minor unit, components and note alike: yen", () => {
    // 3,702 yen in Quebec: GST 185.1 -> 185, QST 369.27 -> 369; a note of 1,001: GST 50.05 -> 50,
    // QST 99.85 -> 100 (in cents they would be 185.10, 369.27, 50.05, 99.85)
    const yen = { subtotal: '3702', tax_amount: '554', currency: 'JPY', taxType: 'GST_QST' as const };
    const byRule = invoiceTaxComponents(yen, qc);
    expect(byRule).toEqual([
      { name: 'GST', jurisdiction: 'CA', rate: '0.05', amount: '185.00000000' },
      { name: 'QST', jurisdiction: 'QC', rate: '0.09975', amount: '369.00000000' },
    ]);
    const tax = noteTax({
      components: byRule,
      invoiceSubtotal: parseMoney('3702'),
      currency: 'JPY',
      subtotal: parseMoney('1001'),
      creditedBefore: none,
    });
    expect(tax.lines.map((l) => l.amount)).toEqual(['50.00000000', '100.00000000']);
    // the customer since moved to Ontario: the stored 554 is split with GST recomputed in yen
    const on = taxRuleFor({ country: 'CA', stateProvince: 'ON' }, '2026-02-01');
    expect(invoiceTaxComponents(yen, on).map((c) => [c.name, c.amount])).toEqual([
      ['GST', '185.00000000'],
      ['QST', '369.00000000'],
    ]);
  });

  it('never gives back less than nothing: a component earlier notes took more of than it has left stays at zero', () => {
    // earlier notes gave back 5.40 of GST (their split, from a rule since changed) though the invoice
    // charged 5.39: the note completing the subtotal takes 0.00 of it, not -0.01, and the QST left
    const last = noteTax({
      components,
      invoiceSubtotal: parseMoney('107.76'),
      currency: 'CAD',
      subtotal: parseMoney('7.76'),
      creditedBefore: {
        subtotal: parseMoney('100'),
        tax: new Map([
          ['GST', parseMoney('5.40')],
          ['QST', parseMoney('10.70')],
        ]),
      },
    });
    expect(last.lines.map((l) => l.amount)).toEqual(['0.00000000', '0.05000000']);
    expect(formatMoney(last.amount)).toBe('0.05000000');
  });

  it("without a rate, each later note takes its own subtotal's share of the invoice's component", () => {
    // 13.00 over 100.00: a note of 30.00 takes 3.90, and so does the next one of 30.00 (not the
    // share of both notes' 60.00, nor a share of the 9.10 left)
    const split = [{ name: 'HST', jurisdiction: null, rate: null, amount: '13.00' }];
    const second = noteTax({
      components: split,
      invoiceSubtotal: parseMoney('100'),
      currency: 'CAD',
      subtotal: parseMoney('30'),
      creditedBefore: { subtotal: parseMoney('30'), tax: new Map([['HST', parseMoney('3.90')]]) },
    });
    expect(second.lines.map((l) => l.amount)).toEqual(['3.90000000']);
    expect(formatMoney(second.amount)).toBe('3.90000000');
  });
});
