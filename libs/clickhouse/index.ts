export { type ClickHouse, openClickHouse } from './client.js';
export { sqlString, tabSeparatedField, tabSeparatedRow } from './tab-separated.js';
