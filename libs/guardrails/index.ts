export { type GuardrailPolicy, type TouchedSubscription, UsageGuardrails } from './evaluator.js';
export { topUpPolicy } from './top-up-policy.js';
