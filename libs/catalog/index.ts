export { getProduct, listProducts, type ProductFilter } from './products.js';
