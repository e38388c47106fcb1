export { DependencyGuard, type DependencyGuardOptions, DependencyUnavailableError } from './guard.js';
