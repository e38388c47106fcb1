export { equalInConstantTime } from './constant-time.js';
export { decimalLength, writeDecimal } from './decimal.js';
