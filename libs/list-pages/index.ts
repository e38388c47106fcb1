export { type CountedList, type ListTotalKey, ListTotalReader, listTotal } from './list-totals.js';
export { orderBy, type PagePlan, planPage, totalImpliedByPage } from './page-plan.js';
export { type ListSource, readPage } from './read-page.js';
