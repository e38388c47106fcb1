export {
  computeTax,
  federalGstOf,
  federalGstOfSubtotal,
  type TaxRule,
  taxRuleFor,
  UnknownRegionError,
} from './tax.js';
