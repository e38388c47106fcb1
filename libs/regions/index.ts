export { regionCode } from './regions.js';
