export { type ClickHouse, openClickHouse } from './client.js';
export { RowBinaryWriter } from './row-binary.js';
export { sqlString, tabSeparatedField, tabSeparatedRow } from './tab-separated.js';
