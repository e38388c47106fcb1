export { CustomerReader, createCustomer, getCustomer, listCustomers, updateCustomer } from './customers.js';
