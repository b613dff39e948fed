// Idempotency keys: POST /api/v1/idempotencyKeys/{key}/reset.
import { ResetIdempotencyKeyResponse } from "../contracts/runs.ts";
import { segment, type HttpTransport } from "./http.ts";
import { validateResponse } from "./validate-response.ts";

export class IdempotencyKeysResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Frees an idempotency key of a task: the next trigger with it makes a new run. The runs that
   * held it keep showing it. Refused (NotFoundError) when no run of the task holds the key.
   *
   * @example
   * await tasks.trigger("charge-order", { orderId: 7 }, { idempotencyKey: "order-7" });
   * await idempotencyKeys.reset("charge-order", "order-7");
   * await tasks.trigger("charge-order", { orderId: 7 }, { idempotencyKey: "order-7" }); // a new run
   */
  async reset(taskIdentifier: string, idempotencyKey: string): Promise<{ id: string }> {
    const path = `/api/v1/idempotencyKeys/${segment(idempotencyKey)}/reset`;
    return validateResponse(ResetIdempotencyKeyResponse, await this.connect().request<unknown>({ method: "POST", path, body: { taskIdentifier } }), `POST ${path}`);
  }
}
