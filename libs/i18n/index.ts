export { displayAmount, displayDate, displayMoney, displayQuantity, displayShortDate } from './format.js';
export { defaultLocaleOf, isLocale, LOCALES, type Locale, localeFromAcceptLanguage } from './locale.js';
export { type Messages, messagesFor } from './messages.js';
