export { DependencyGuard, type DependencyGuardOptions, DependencyUnavailableError } from './guard.js';
export { isSocketErrorCode } from './socket-errors.js';
