export { createCustomer, getCustomer, listCustomers } from './customers.js';
