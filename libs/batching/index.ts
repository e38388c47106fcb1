export { Batcher, type BatcherOptions } from './batcher.js';
