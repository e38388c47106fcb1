export { Batcher, type BatcherOptions } from './batcher.js';
export { groupCommit } from './group-commit.js';
