export { InFlightRequests } from './in-flight.js';
