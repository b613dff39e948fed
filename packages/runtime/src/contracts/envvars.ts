import { z } from "zod";
import { storedText } from "./text.ts";

/** A variable name as the engine accepts it (envvars/names.ts): the document's pattern for names. */
const VARIABLE_NAME_SCHEMA = { pattern: "^[A-Za-z_][A-Za-z0-9_]*$", maxLength: 256, not: { enum: ["SERVICE_SECRET_KEY", "SERVICE_API_URL"] } };

/** `{projectRef}` of `/api/v1/projects/{projectRef}/…`. */
export const ProjectRefParam = storedText(z.string().min(1).max(128));

/** `{name}` of `…/envvars/{env}/{name}`: looked up as given (a name that cannot exist is a 404). */
export const EnvVarNameParam = storedText(z.string().min(1).max(1024));

/** `{name}` of an update (PUT/POST), which writes it: a name the engine accepts (400 otherwise). */
export const EnvVarWriteNameParam = EnvVarNameParam.meta(VARIABLE_NAME_SCHEMA);

/** `{env}` in `/api/v1/projects/{projectRef}/envvars/{env}`: `stg` is accepted for staging. */
export const EnvVarEnvironmentParam = z.enum(["dev", "staging", "stg", "prod", "preview"], {
  error: "env must be one of dev, staging, prod, preview",
});

export const EnvironmentVariableItem = z.object({
  name: z.string(),
  /** "<redacted>" for secret variables. */
  value: z.string(),
  isSecret: z.boolean(),
});
export type EnvironmentVariableItem = z.infer<typeof EnvironmentVariableItem>;

/** `envvars.list` answers a bare array (the SDK rejects a `{ data }` wrapper). */
export const ListEnvironmentVariablesResponse = z.array(EnvironmentVariableItem);

/** `envvars.upload(projectRef, env, { variables, override })`. */
export const ImportEnvironmentVariablesRequestBody = z.object({
  variables: z.record(z.string().meta(VARIABLE_NAME_SCHEMA), z.string()).meta({ minProperties: 1, maxProperties: 1000 }),
  /** Replace variables that already exist. @default false */
  override: z.boolean().optional(),
  /** Mark every uploaded variable secret (redacted on read). @default false for new variables */
  isSecret: z.boolean().optional(),
});

/** `envvars.create(projectRef, env, { name, value, isSecret })`: always replaces an existing value. */
export const CreateEnvironmentVariableRequestBody = z.object({
  name: z.string().min(1, "name must not be empty").meta(VARIABLE_NAME_SCHEMA),
  value: z.string(),
  /** @default false (or the existing variable's flag) */
  isSecret: z.boolean().optional(),
});

/** `envvars.update(projectRef, env, name, { value })`. */
export const UpdateEnvironmentVariableRequestBody = z.object({ value: z.string() });

/** Every env var write answers `{ success: true }`. */
export const EnvironmentVariableResponseBody = z.object({ success: z.boolean() });
