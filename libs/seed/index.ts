export { type SeededOrganization, seedDemo, seedDemoData } from './seed.js';
