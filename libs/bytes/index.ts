export { decimalLength, writeDecimal } from './decimal.js';
