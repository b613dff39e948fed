import { readRuntimeFile } from "@svc/api/cli";

/** The API a command talks to, and with which credential. */
export interface ApiTarget {
  baseURL: string;
  credential: string;
  previewBranch: string | undefined;
}

/** A missing or unreadable setting: exit code 1, with what to do. */
export class TargetError extends Error {}

/**
 * Where `svc runs` and `svc tokens` send their requests, resolved as the other commands resolve
 * theirs: the environment (SERVICE_API_URL, SERVICE_SECRET_KEY and SERVICE_PREVIEW_BRANCH, the
 * variables the management client reads), and for each one missing the runtime file `svc dev`
 * writes (SVC_RUNTIME_FILE, else `.svc/runtime.json`): its API address and the dev key.
 */
export function resolveApiTarget(env: NodeJS.ProcessEnv): ApiTarget {
  let file;
  try {
    file = readRuntimeFile(env);
  } catch (error) {
    throw new TargetError((error as Error).message);
  }
  const credential = env.SERVICE_SECRET_KEY || file.secretKey;
  if (!credential) {
    throw new TargetError(
      `SERVICE_SECRET_KEY is not set, and no ${file.path} holds svc dev's key: set it to an environment's secret key (svc keys show prints them) or a personal access token, or run svc dev in this folder first`,
    );
  }
  const baseURL = env.SERVICE_API_URL || file.apiUrl || "http://localhost:3030";
  try {
    new URL(baseURL);
  } catch {
    throw new TargetError(`SERVICE_API_URL is not a URL: set it to where svc's API listens, e.g. http://localhost:3030`);
  }
  return { baseURL, credential, previewBranch: env.SERVICE_PREVIEW_BRANCH || undefined };
}
