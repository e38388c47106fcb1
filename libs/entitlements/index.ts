/**
 * Entitlements: whether a customer may use a product now, from the item's usage limit and the
 * usage counted in its running period (libs/README.md, "Where a new kind of feature goes").
 */
export { type CheckOptions, getEntitlement, listEntitlements, type RequestCount } from './entitlements.js';
