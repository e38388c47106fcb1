export { PostgresUsageAggregator, type UsageAggregator, ZERO_QUANTITY } from './aggregation.js';
export { type OpenedUsageAggregator, openUsageAggregator } from './open.js';
