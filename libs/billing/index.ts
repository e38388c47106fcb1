export {
  CANADIAN_PROVINCES,
  computeTax,
  type TaxComponent,
  type TaxComputation,
  type TaxDestination,
  type TaxLine,
  type TaxRule,
  taxRuleFor,
  US_STATE_RATES,
} from './tax.js';
