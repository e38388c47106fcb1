import { z } from 'zod';

type WithoutDefault<T> = T extends z.ZodDefault<infer Inner> ? Inner : T;

/** The shape of updateInputOf(schema): each field optional, its default gone. */
export type UpdateShape<Shape extends z.ZodRawShape> = {
  -readonly [K in keyof Shape]: z.ZodOptional<WithoutDefault<Shape[K]>>;
};

/**
 * The input of an update, derived from the create schema: every field optional and none
 * defaulted, so that a field left out is left as it is. zod's `.partial()` keeps defaults: an
 * update that left `country` out would set it back to `CA`. Strictness (unknown fields refused)
 * and every field's own rules carry over.
 */
export function updateInputOf<Shape extends z.ZodRawShape, Config extends z.core.$ZodObjectConfig>(
  create: z.ZodObject<Shape, Config>,
): z.ZodObject<UpdateShape<Shape>, Config> {
  const fields = Object.fromEntries(
    Object.entries(create.shape).map(([name, field]) => [
      name,
      z.optional(field instanceof z.ZodDefault ? field.unwrap() : field),
    ]),
  );
  return create.extend(fields) as unknown as z.ZodObject<UpdateShape<Shape>, Config>;
}
