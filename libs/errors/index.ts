export { ApiError, type ErrorCode, type FieldError, statusOf } from './api-error.js';
export { type ErrorBody, toErrorBody } from './error-body.js';
export { fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from './zod-issues.js';
