export { checkTopUps, getCreditTopUp, setCreditTopUp, TOP_UP_GRANT_NAME } from './top-up.js';
