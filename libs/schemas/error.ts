import { z } from 'zod';

export const FieldError = z
  .object({
    field: z.string().meta({ description: 'Dotted path of the body field, or the query parameter name.' }),
    message: z.string(),
    code: z.string().meta({
      description:
        'required, invalid_type, invalid_format, invalid_value, too_long, too_short, blank, out_of_range, unknown_field',
    }),
  })
  .meta({ id: 'FieldError' });

export const ErrorBody = z
  .object({
    error_code: z.string().meta({ examples: ['VALIDATION_ERROR'] }),
    detail: z.string(),
    request_id: z.uuid(),
    details: z.array(FieldError).optional(),
  })
  .meta({ id: 'Error' });
