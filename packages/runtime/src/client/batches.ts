// Batches: retrieve one (GET /api/v2/batches/{id}) and its runs' results (GET /api/v1/batches/{id}/results).
import type { z } from "zod";
import { RetrieveBatchResponse } from "../contracts/batches.ts";
import { BatchResultsResponse } from "../contracts/run-results.ts";
import { segment, type HttpTransport } from "./http.ts";
import { reviveDates } from "./pagination.ts";
import { validateResponse } from "./validate-response.ts";

type BatchWire = z.output<typeof RetrieveBatchResponse>;

/** A batch: its status (COMPLETED once every run finished) and run ids in item order. */
export type BatchObject = Omit<BatchWire, "createdAt" | "updatedAt" | "processing"> & {
  createdAt: Date;
  updatedAt: Date;
  processing: Omit<BatchWire["processing"], "completedAt"> & { completedAt?: Date };
};

/** The results of a batch's finished runs, in item order. */
export type BatchResults = z.output<typeof BatchResultsResponse>;

export class BatchesResource {
  constructor(private readonly connect: () => HttpTransport) {}

  /**
   * Retrieves a batch: its status and the ids of its runs, in item order.
   *
   * @example
   * const batch = await batches.retrieve(handle.batchId);
   * console.log(batch.status, batch.runs.length);
   */
  async retrieve(batchId: string): Promise<BatchObject> {
    const path = `/api/v2/batches/${segment(batchId)}`;
    const batch = validateResponse(RetrieveBatchResponse, await this.connect().request<unknown>({ method: "GET", path }), `GET ${path}`);
    return { ...reviveDates(batch, ["createdAt", "updatedAt"]), processing: reviveDates(batch.processing, ["completedAt"]) } as unknown as BatchObject;
  }

  /**
   * The results of a batch's finished runs, in item order (runs still under way are left out):
   * each `{ ok: true, output }` or `{ ok: false, error }`, the output as stored.
   *
   * @example
   * const { items } = await batches.results(handle.batchId);
   * console.log(items.filter((r) => !r.ok).length, "failed");
   */
  async results(batchId: string): Promise<BatchResults> {
    const path = `/api/v1/batches/${segment(batchId)}/results`;
    return validateResponse(BatchResultsResponse, await this.connect().request<unknown>({ method: "GET", path }), `GET ${path}`);
  }
}
