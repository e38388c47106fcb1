export {
  addScaled,
  compareScaled,
  divideRoundHalfEven,
  formatMoney,
  formatQuantity,
  formatScaled,
  MONEY_SCALE,
  multiplyScaled,
  parseMoney,
  parseScaled,
  QUANTITY_SCALE,
  rescale,
} from './fixed-point.js';
export { isInMinorUnits, minorUnitDigits, roundToMinorUnit } from './minor-units.js';
