export { alertPolicy } from './alert-policy.js';
export {
  type AlertFilter,
  type AlertScope,
  createAlert,
  deleteAlert,
  type EvaluationScope,
  evaluateAlerts,
  getAlert,
  listAlerts,
} from './alerts.js';
export { draftPolicy } from './draft-policy.js';
export { type GuardrailPolicy, type TouchedSubscription, UsageGuardrails } from './evaluator.js';
export { afterCreditsMoved } from './moves.js';
export { QuantityAlerts, type QuantityAlertsOptions } from './quantity-alerts.js';
export { topUpPolicy } from './top-up-policy.js';
