/**
 * The Standard Schema interface (standardschema.dev), which zod (3.24+ and 4), valibot, arktype
 * and effect's schemas implement: how schemaTask validates without depending on any of them.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}
type StandardResult<Output> = { readonly value: Output; readonly issues?: undefined } | { readonly issues: readonly { readonly message: string; readonly path?: readonly unknown[] | undefined }[] };

/** A payload schema: a Standard Schema (zod, valibot, arktype …), anything with `parse`, or a function that returns the parsed payload or throws. */
export type TaskSchema = StandardSchemaV1<any, any> | { parse(value: unknown): unknown } | ((value: unknown) => unknown);

/** The payload a trigger sends for a schema. */
export type inferSchemaIn<S> = S extends StandardSchemaV1<infer I, any> ? I : S extends (value: infer I) => any ? I : S extends { parse(value: infer I): any } ? I : unknown;
/** The payload `run` receives for a schema. */
export type inferSchemaOut<S> = S extends StandardSchemaV1<any, infer O> ? O : S extends (value: any) => infer O ? Awaited<O> : S extends { parse(value: any): infer O } ? O : unknown;

/** The function that parses a payload with `schema` (throws what the schema reports). */
export function schemaParser(schema: TaskSchema): (value: unknown) => Promise<unknown> {
  if (typeof schema === "function") return async (value) => schema(value);
  if (schema && typeof schema === "object" && "~standard" in schema) {
    return async (value) => {
      const result = await schema["~standard"].validate(value);
      if (result.issues) throw new Error(result.issues.map((i) => (i.path?.length ? `${i.path.map(pathSegment).join(".")}: ${i.message}` : i.message)).join("; "));
      return result.value;
    };
  }
  if (schema && typeof schema === "object" && typeof (schema as { parse?: unknown }).parse === "function") return async (value) => (schema as { parse(v: unknown): unknown }).parse(value);
  throw new Error("schemaTask(): `schema` must be a Standard Schema (zod, valibot, arktype …), have a parse method, or be a function");
}

function pathSegment(segment: unknown): string {
  return typeof segment === "object" && segment !== null && "key" in segment ? String((segment as { key: unknown }).key) : String(segment);
}
