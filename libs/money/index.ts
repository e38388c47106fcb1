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
export {
  BILLABLE_CURRENCIES,
  isBillableCurrency,
  isInMinorUnits,
  knownMinorUnitDigits,
  minorUnitDigits,
  roundToMinorUnit,
  UnknownCurrencyError,
} from './minor-units.js';
