export { CustomerReader, createCustomer, getCustomer, listCustomers } from './customers.js';
