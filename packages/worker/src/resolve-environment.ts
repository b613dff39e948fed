import {
  AuthenticationError,
  ensureDefaultProject,
  findEnvironmentBySecretKey,
  getBranchEnvironment,
  sanitizeBranchName,
  withTransaction,
  type EngineDeps,
  type Environment,
} from "@svc/runtime/engine";

/**
 * The environment a worker serves: the one its secret key belongs to (a preview branch when
 * SERVICE_PREVIEW_BRANCH names one), or the default project's dev environment when no key is set.
 */
export async function resolveWorkerEnvironment(engine: EngineDeps, secretKey: string | undefined, previewBranch: string | undefined): Promise<{ environment: Environment; secretKey: string }> {
  let key = secretKey;
  if (!key) {
    const project = await withTransaction(engine.db, (tx) => ensureDefaultProject(tx, engine.secrets, engine.clock.now()));
    key = project.environments.dev.secretKey;
  }
  const env = await findEnvironmentBySecretKey(engine.db, key, engine.clock.now());
  if (!env) throw new AuthenticationError("SERVICE_SECRET_KEY is not a valid secret key for this database");
  const branch = sanitizeBranchName(previewBranch);
  if (env.slug === "preview" && branch) {
    const branchEnv = await getBranchEnvironment(engine.db, env.id, branch);
    if (!branchEnv) throw new AuthenticationError(`no preview branch named "${branch}" (create it with: svc branches create)`);
    return { environment: branchEnv, secretKey: key };
  }
  return { environment: env, secretKey: key };
}
