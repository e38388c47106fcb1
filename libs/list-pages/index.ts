export { orderBy, type PagePlan, planPage, totalImpliedByPage } from './page-plan.js';
export { type ListSource, readPage } from './read-page.js';
export { sharedCount } from './shared-count.js';
