export { knownRegion, regionCode, regionProblem, TAX_REGIONS } from './regions.js';
