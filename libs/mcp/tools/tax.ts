import { z } from 'zod';
import { computeTax, taxRuleFor } from '../../billing/index.js';
import { addScaled, formatMoney, parseMoney } from '../../money/index.js';
import { regionCode, regionProblem } from '../../regions/index.js';
import { CURRENCIES, countryCode, inputDate } from '../../schemas/index.js';
import { defineTool } from './tool.js';

export const taxLookupTool = defineTool({
  name: 'tax_lookup',
  title: 'Sales tax for a destination',
  description:
    'The destination sales tax an invoice dated `date` (default today, UTC) applies: Canada by province ' +
    '(GST, HST, GST + QST, GST + PST) or the US statewide base rate (local taxes excluded). ' +
    'With an amount, also the tax lines and the total.',
  input: z
    .strictObject({
      country: countryCode.describe('Two-letter country code, e.g. CA or US.'),
      state_province: z
        .string()
        .trim()
        .min(1)
        .max(50)
        .optional()
        .describe('Province or state code, e.g. QC, ON, NY; required in CA and the US.'),
      amount: z
        .string()
        .regex(
          /^\d{1,12}(\.\d{1,8})?$/,
          'Must be a non-negative decimal string with at most 8 fractional digits.',
        )
        .optional()
        .describe('Pre-tax amount as a decimal string, e.g. "100.00".'),
      currency: z
        .enum(CURRENCIES)
        .optional()
        .describe(
          'Currency of the amount (taxes are rounded to its minor unit); default CAD, USD in the US.',
        ),
      date: inputDate
        .optional()
        .describe('Invoice date, YYYY-MM-DD (rates change over time); default today (UTC).'),
    })
    // Canada and the US tax by region: without one the table knows there is no answer to quote
    .superRefine(({ country, state_province }, ctx) => {
      const problem = regionProblem(country, state_province, { required: true });
      if (problem) ctx.addIssue({ code: 'custom', path: ['state_province'], message: problem.message });
    }),
  async run({ country, state_province, amount, currency, date }, { today }) {
    const onDate = date ?? today;
    const rule = taxRuleFor({ country, stateProvince: state_province }, onDate);
    const lookup = {
      country,
      date: onDate,
      // the code the rule was chosen by ("Québec" -> QC), not the text as typed
      state_province: state_province ? regionCode(country, state_province) : null,
      tax_type: rule.taxType,
      rate: rule.rate,
      components: rule.components,
      note: rule.note,
    };
    if (amount === undefined) return lookup;
    // the invoices' own rounding (docs/architecture.md, "Money"): what an assistant quotes is what is charged
    const tax = computeTax(rule, amount, currency ?? (country.toUpperCase() === 'US' ? 'USD' : 'CAD'));
    return {
      ...lookup,
      amount: formatMoney(parseMoney(amount)),
      tax_lines: tax.lines,
      tax_amount: tax.amount,
      total_with_tax: formatMoney(addScaled(parseMoney(amount), parseMoney(tax.amount))),
    };
  },
});
