export { type SeededOrganization, seedDemoData } from './seed.js';
