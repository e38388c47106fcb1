import {
  formatMoney,
  formatScaled,
  MONEY_SCALE,
  multiplyScaled,
  parseScaled,
  roundToMinorUnit,
} from '../../money/index.js';
import { knownRegion, TAX_REGIONS } from '../../regions/index.js';
import type { TaxType } from '../../schemas/index.js';

/**
 * Destination-based sales tax (docs/architecture.md, "Rules of the contract"): Canada's GST, HST, QST and PST by province, the base
 * state rate in the US. One function serves invoices and the MCP `tax_lookup` tool, so what an
 * assistant quotes is what the invoice charges.
 */

/** Rates are decimal fractions as text ('0.09975' is 9.975 %), parsed at this scale. */
const RATE_SCALE = 6;

export interface TaxDestination {
  country: string;
  stateProvince?: string | null | undefined;
  taxExempt?: boolean | undefined;
}

export interface TaxComponent {
  /** GST, HST, QST, PST or STATE_SALES_TAX. */
  name: string;
  /** Where the component is levied: 'CA' for GST, the province or state code otherwise. */
  jurisdiction: string;
  rate: string;
}

export interface TaxRule {
  /** The invoice item's `tax_type`; null when no rule applies (a country taxed by no rule here). */
  taxType: TaxType | null;
  components: TaxComponent[];
  /** Sum of the components' rates. */
  rate: string;
  /** Why the rule is what it is, in a sentence a person (or an assistant) can quote. */
  note: string;
}

export interface TaxLine extends TaxComponent {
  amount: string;
}

export interface TaxComputation {
  taxType: TaxType | null;
  lines: TaxLine[];
  /** Sum of the lines, each rounded half-up to the currency's minor unit. */
  amount: string;
}

const GST = (): TaxComponent => ({ name: 'GST', jurisdiction: 'CA', rate: '0.05' });

/** Nova Scotia's HST went from 15 % to 14 % on 2025-04-01. */
const NS_HST_CUT = '2025-04-01';

const HST_RATES: Record<string, string> = { ON: '0.13', NB: '0.15', NL: '0.15', PE: '0.15' };
const PST_RATES: Record<string, string> = { BC: '0.07', SK: '0.06', MB: '0.07' };
const GST_ONLY = new Set(['AB', 'YT', 'NT', 'NU']);

/** Statewide base sales tax rates (local taxes excluded); 0 in the five states without one. */
export const US_STATE_RATES: Readonly<Record<string, string>> = {
  AL: '0.04',
  AK: '0',
  AZ: '0.056',
  AR: '0.065',
  CA: '0.0725',
  CO: '0.029',
  CT: '0.0635',
  DC: '0.06',
  DE: '0',
  FL: '0.06',
  GA: '0.04',
  HI: '0.04',
  ID: '0.06',
  IL: '0.0625',
  IN: '0.07',
  IA: '0.06',
  KS: '0.065',
  KY: '0.06',
  LA: '0.05',
  ME: '0.055',
  MD: '0.06',
  MA: '0.0625',
  MI: '0.06',
  MN: '0.06875',
  MS: '0.07',
  MO: '0.04225',
  MT: '0',
  NE: '0.055',
  NV: '0.0685',
  NH: '0',
  NJ: '0.06625',
  NM: '0.04875',
  NY: '0.04',
  NC: '0.0475',
  ND: '0.05',
  OH: '0.0575',
  OK: '0.045',
  OR: '0',
  PA: '0.06',
  RI: '0.07',
  SC: '0.06',
  SD: '0.042',
  TN: '0.07',
  TX: '0.0625',
  UT: '0.061',
  VT: '0.06',
  VA: '0.053',
  WA: '0.065',
  WV: '0.06',
  WI: '0.05',
  WY: '0.04',
};

/** Canada's provinces and territories: each has a rule below (tax.test.ts holds the lists together). */
export const CANADIAN_PROVINCES = TAX_REGIONS.CA!;

/**
 * A destination in a country taxed by region (Canada, the US) whose region is missing or not one
 * the tax table knows: its tax cannot be determined, and guessing (federal GST alone, or nothing)
 * would undertax. A fault of the stored customer, the same on every retry: the billing run parks
 * the subscription with this reason (composing turns it into an UnbillableError).
 */
export class UnknownRegionError extends RangeError {
  constructor(country: string, stateProvince: string | null | undefined) {
    const region = country === 'CA' ? 'province or territory' : 'state';
    super(
      stateProvince?.trim()
        ? `the customer's state_province ${JSON.stringify(stateProvince.trim())} is no ${country} ${region} the tax table knows, so its tax cannot be determined (correct it with customer update)`
        : `the customer is in ${country} without a state_province, so its tax cannot be determined (set its ${region} with customer update)`,
    );
    this.name = 'UnknownRegionError';
  }
}

/**
 * The tax rule for a destination on a date (YYYY-MM-DD, the invoice date; rates change over time).
 * Throws UnknownRegionError for a taxable destination in Canada or the US without a region the
 * table knows (docs/decisions.md "A customer's region is one the tax table knows").
 */
export function taxRuleFor(destination: TaxDestination, onDate: string = today()): TaxRule {
  const country = destination.country.trim().toUpperCase();
  if (destination.taxExempt) {
    return rule('EXEMPT', [], 'The customer is tax-exempt: no sales tax is charged.');
  }
  if (country !== 'CA' && country !== 'US') {
    return rule(null, [], `No sales tax rule for country ${country}: no tax computed.`);
  }
  const region = knownRegion(country, destination.stateProvince);
  if (!region) throw new UnknownRegionError(country, destination.stateProvince);
  if (country === 'CA') return canadianRule(region, onDate);
  const rate = US_STATE_RATES[region]!;
  const components = [{ name: 'STATE_SALES_TAX', jurisdiction: region, rate }];
  return rule(
    'US_SALES_TAX',
    components,
    isZero(rate)
      ? `${region} has no statewide sales tax.`
      : `${region} statewide base sales tax; local taxes are not included.`,
  );
}

function canadianRule(province: string, onDate: string): TaxRule {
  if (province === 'NS') {
    const rate = onDate < NS_HST_CUT ? '0.15' : '0.14';
    return rule('HST', [{ name: 'HST', jurisdiction: 'NS', rate }], 'Nova Scotia harmonized sales tax.');
  }
  const hst = HST_RATES[province];
  if (hst) return rule('HST', [{ name: 'HST', jurisdiction: province, rate: hst }], 'Harmonized sales tax.');
  if (province === 'QC') {
    return rule(
      'GST_QST',
      [GST(), { name: 'QST', jurisdiction: 'QC', rate: '0.09975' }],
      'Quebec: federal GST plus Quebec sales tax.',
    );
  }
  const pst = PST_RATES[province];
  if (pst) {
    return rule(
      'GST_PST',
      [GST(), { name: 'PST', jurisdiction: province, rate: pst }],
      'Federal GST plus provincial sales tax.',
    );
  }
  if (GST_ONLY.has(province)) return rule('GST', [GST()], 'Federal GST only; no provincial sales tax.');
  // every code of CANADIAN_PROVINCES is one of the above (tax.test.ts)
  throw new Error(`no tax rule for province ${province}`);
}

/**
 * Applies a rule to a pre-tax amount (a money string; on an invoice, the taxable subtotal of the
 * rule): each component is rounded half-up to the currency's minor unit (docs/architecture.md, "Money", as the CRA
 * and US states expect), then the components are summed.
 */
export function computeTax(taxRule: TaxRule, amount: string, currency: string): TaxComputation {
  const base = parseScaled(amount, MONEY_SCALE);
  let total = 0n;
  const lines = taxRule.components.map((component) => {
    const tax = roundToMinorUnit(base, currency, {
      numerator: parseScaled(component.rate, RATE_SCALE),
      denominator: 10n ** BigInt(RATE_SCALE),
    });
    total += tax;
    return { ...component, amount: formatMoney(tax) };
  });
  return { taxType: taxRule.taxType, lines, amount: formatMoney(total) };
}

/**
 * The federal GST part of a Canadian line's tax on invoices issued before payable amounts (their
 * components were rounded half-even at 8 digits per line): a printed invoice splits GST + QST or
 * GST + PST into its parts, which must agree with the stored tax.
 */
export function federalGstOf(preTaxAmount: string): string {
  return formatMoney(
    multiplyScaled(
      parseScaled(preTaxAmount, MONEY_SCALE),
      MONEY_SCALE,
      parseScaled('0.05', RATE_SCALE),
      RATE_SCALE,
      MONEY_SCALE,
    ),
  );
}

/** The federal GST of a taxable subtotal under the payable-amounts rule (docs/architecture.md, "Money"). */
export function federalGstOfSubtotal(subtotal: string, currency: string): string {
  return computeTax(rule('GST', [GST()], ''), subtotal, currency).amount;
}

function rule(taxType: TaxType | null, components: TaxComponent[], note: string): TaxRule {
  const sum = components.reduce((acc, c) => acc + parseScaled(c.rate, RATE_SCALE), 0n);
  return { taxType, components, rate: trimRate(sum), note };
}

/** A rate as the shortest decimal text: 0.14975, 0.05, 0. */
function trimRate(scaled: bigint): string {
  return formatScaled(scaled, RATE_SCALE).replace(/\.?0+$/, '') || '0';
}

function isZero(rate: string): boolean {
  return parseScaled(rate, RATE_SCALE) === 0n;
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}
