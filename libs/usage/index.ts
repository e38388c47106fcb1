export { PostgresUsageAggregator, type UsageAggregator, ZERO_QUANTITY } from './aggregation.js';
