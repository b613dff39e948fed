// Environment variables of a project's environment: /api/v1/projects/{projectRef}/envvars/{env}[/{name}].
// Secret key (its own project and environment) or personal access token. On `preview`, the client's
// previewBranch selects the branch whose variables are read or changed.
import { segment, type HttpTransport } from "./http.ts";

/** dev | staging | prod | preview */
export type EnvironmentSlug = "dev" | "staging" | "prod" | "preview" | (string & {});

export interface EnvironmentVariable {
  name: string;
  /** `"<redacted>"` for secret variables. */
  value: string;
  isSecret: boolean;
}

export interface UploadEnvironmentVariables {
  variables: Record<string, string>;
  /** Replace variables that already exist; otherwise an existing name is an error. @default false */
  override?: boolean;
}

export interface CreateEnvironmentVariable {
  name: string;
  value: string;
  /** Redacted on every later read. @default false */
  isSecret?: boolean;
}

export interface EnvironmentVariableResult {
  success: boolean;
}

function base(projectRef: string, env: EnvironmentSlug): string {
  return `/api/v1/projects/${segment(projectRef)}/envvars/${segment(env)}`;
}

export class EnvVarsResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Lists the variables of an environment (secret values redacted).
   *
   * @example
   * const vars = await envvars.list("proj_abc", "prod");
   */
  async list(projectRef: string, env: EnvironmentSlug): Promise<EnvironmentVariable[]> {
    const { data } = await this.connect().request<EnvironmentVariable[]>({ method: "GET", path: base(projectRef, env) });
    return data;
  }

  /**
   * Reads one variable.
   *
   * @example
   * const { value } = await envvars.retrieve("proj_abc", "dev", "DATABASE_URL");
   */
  async retrieve(projectRef: string, env: EnvironmentSlug, name: string): Promise<EnvironmentVariable> {
    const { data } = await this.connect().request<EnvironmentVariable>({ method: "GET", path: `${base(projectRef, env)}/${segment(name)}` });
    return data;
  }

  /**
   * Sets many variables at once.
   *
   * @example
   * await envvars.upload("proj_abc", "preview", { variables: { API_URL: "https://staging.example" }, override: true });
   */
  async upload(projectRef: string, env: EnvironmentSlug, params: UploadEnvironmentVariables): Promise<EnvironmentVariableResult> {
    const body = { variables: params.variables, override: params.override ?? false };
    const { data } = await this.connect().request<EnvironmentVariableResult>({ method: "POST", path: `${base(projectRef, env)}/import`, body });
    return data;
  }

  /**
   * Creates (or replaces) one variable.
   *
   * @example
   * await envvars.create("proj_abc", "dev", { name: "STRIPE_KEY", value: "sk_test_…", isSecret: true });
   */
  async create(projectRef: string, env: EnvironmentSlug, params: CreateEnvironmentVariable): Promise<EnvironmentVariableResult> {
    const { data } = await this.connect().request<EnvironmentVariableResult>({ method: "POST", path: base(projectRef, env), body: params });
    return data;
  }

  /**
   * Changes the value of an existing variable (`PUT …/{name}` with `{ value }`).
   *
   * @example
   * await envvars.update("proj_abc", "prod", "LOG_LEVEL", { value: "debug" });
   */
  async update(projectRef: string, env: EnvironmentSlug, name: string, params: { value: string }): Promise<EnvironmentVariableResult> {
    const { data } = await this.connect().request<EnvironmentVariableResult>({
      method: "PUT",
      path: `${base(projectRef, env)}/${segment(name)}`,
      body: { value: params.value },
    });
    return data;
  }

  /**
   * Deletes a variable from this environment (or preview branch) only.
   *
   * @example
   * await envvars.del("proj_abc", "dev", "OLD_FLAG");
   */
  async del(projectRef: string, env: EnvironmentSlug, name: string): Promise<EnvironmentVariableResult> {
    const { data } = await this.connect().request<EnvironmentVariableResult>({ method: "DELETE", path: `${base(projectRef, env)}/${segment(name)}` });
    return data;
  }
}
