export { computeTax, federalGstOf, federalGstOfSubtotal, type TaxRule, taxRuleFor } from './tax.js';
