export {
  createProduct,
  getPriceTiers,
  NewPriceTier,
  NewProduct,
  type ProductWithTiers,
  UpdateProduct,
  updateProduct,
} from './product-admin.js';
export { getProduct, listProducts, type ProductFilter } from './products.js';
