import type { FastifyInstance } from "fastify";
import type { Clock } from "@svc/runtime/engine";
import { ByteBudget } from "./byte-budget.ts";
import { AddressRateLimiter, type RateLimit } from "./rate-limit.ts";
import { LoginThrottle, type LoginRateLimit } from "../dashboard/login-throttle.ts";
import { DEFAULT_SUBSCRIPTION_LIMITS, SubscriptionCounter, type SubscriptionLimits } from "../realtime/subscription-limits.ts";

/** Limits the API enforces beyond body size; main.ts takes them from the configuration. */
export interface ApiLimits {
  /** Per client address, on routes without credentials (callback URLs, packet URLs); null = off. */
  publicRateLimit: RateLimit | null;
  /** Failed dashboard sign-ins, per client address and per token prefix; null = off. */
  loginRateLimit: LoginRateLimit | null;
  /** Session channel subscriptions (SSE) open at once per public token and per client address. */
  subscriptions: SubscriptionLimits;
  /** Live realtime run subscriptions (long polls held open) per public token and per client address. */
  runSubscriptions: SubscriptionLimits;
  /** How long a live realtime run request waits for a change before answering "up to date" (ElectricSQL holds ~20 s). */
  realtimeLivePollMs: number;
  /** Bytes of packet uploads held in memory at once, across all uploads. */
  packetUploadBufferBytes: number;
  /**
   * How long a request may take to arrive whole (Node's own default, which Fastify turns off): a
   * client trickling a body byte by byte cannot hold a connection, or an upload's share of the
   * packet buffer, for ever.
   */
  requestTimeoutMs: number;
}

/** What tests get unless they ask: no rate limit (it would get in the way of fast test traffic); the production bounds on open subscriptions. */
export const DEFAULT_LIMITS: ApiLimits = {
  publicRateLimit: null,
  loginRateLimit: null,
  subscriptions: DEFAULT_SUBSCRIPTION_LIMITS,
  runSubscriptions: DEFAULT_SUBSCRIPTION_LIMITS,
  realtimeLivePollMs: 20_000,
  packetUploadBufferBytes: 128 * 1024 * 1024,
  requestTimeoutMs: 300_000,
};

/** The per-app state behind the limits (per app, not per process: tests run several apps). */
export interface LimitState {
  publicRate: AddressRateLimiter | null;
  login: LoginThrottle | null;
  subscriptions: SubscriptionCounter;
  runSubscriptions: SubscriptionCounter;
  realtimeLivePollMs: number;
  packetUploads: ByteBudget;
}

const LIMITS = Symbol("svc limits");
type WithLimits = FastifyInstance & { [LIMITS]?: LimitState };

export function installLimits(app: FastifyInstance, limits: ApiLimits, clock: Clock): LimitState {
  const state: LimitState = {
    publicRate: limits.publicRateLimit ? new AddressRateLimiter(limits.publicRateLimit, clock) : null,
    login: limits.loginRateLimit ? new LoginThrottle(limits.loginRateLimit, clock) : null,
    subscriptions: new SubscriptionCounter(limits.subscriptions),
    runSubscriptions: new SubscriptionCounter(limits.runSubscriptions),
    realtimeLivePollMs: limits.realtimeLivePollMs,
    packetUploads: new ByteBudget(limits.packetUploadBufferBytes),
  };
  (app as WithLimits)[LIMITS] = state;
  return state;
}

/** The limit state of this app (plugin scopes see their parent's). */
export function limitsOf(app: FastifyInstance): LimitState {
  const state = (app as WithLimits)[LIMITS];
  if (!state) throw new Error("limits not installed: createApp installs them before registering routes");
  return state;
}
