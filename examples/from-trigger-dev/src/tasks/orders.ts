// original/orders.ts ported to svc: the import, and the two side effects before the wait in step.run.
import { AbortTaskRunError, logger, queue, retry, schemaTask, step, tags, task, wait } from "@svc/runtime";
import { z } from "zod";

const shop = () => process.env.SHOP_API_URL ?? "http://localhost:4000";

export const emails = queue({ name: "emails", concurrencyLimit: 5 });

export const sendReceipt = task({
  id: "send-receipt",
  queue: emails,
  retry: { maxAttempts: 5, factor: 2, minTimeoutInMs: 500 },
  run: async (payload: { orderId: string; email: string; amount: number }) => {
    const response = await retry.fetch(`${shop()}/emails`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ to: payload.email, subject: `Your receipt for order ${payload.orderId}` }),
    });
    const { messageId } = (await response.json()) as { messageId: string };
    logger.info("Receipt sent", { orderId: payload.orderId, messageId });
    return { messageId };
  },
});

export const fulfilOrder = schemaTask({
  id: "fulfil-order",
  schema: z.object({ orderId: z.string().min(1), email: z.email(), amount: z.number().positive() }),
  retry: { maxAttempts: 3, factor: 2, minTimeoutInMs: 1_000, maxTimeoutInMs: 10_000 },
  maxDuration: 300,
  onStart: async ({ payload }) => {
    logger.info("Fulfilling order", { orderId: payload.orderId });
  },
  onSuccess: async ({ payload, output }) => {
    logger.info("Order done", { orderId: payload.orderId, output });
  },
  onFailure: async ({ payload, error }) => {
    logger.error("Order failed", { orderId: payload.orderId, error });
  },
  run: async (payload, { ctx }) => {
    await tags.add(`order:${payload.orderId}`);
    // Recorded once: a replay after the wait gets the same time and reference back.
    const { receivedAt, reference } = await step.run("received", () => ({ receivedAt: new Date().toISOString(), reference: `ref_${crypto.randomUUID()}` }));

    const charge = await retry.fetch(`${shop()}/charges`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ orderId: payload.orderId, amount: payload.amount, reference }),
      retry: { byStatus: { "500-599": { strategy: "backoff", maxAttempts: 4, factor: 2, minTimeoutInMs: 200 } } },
    });
    if (!charge.ok) throw new AbortTaskRunError(`The payment was refused (${charge.status})`);
    const { chargeId } = (await charge.json()) as { chargeId: string };

    const approval = await wait.createToken({ timeout: "1d", tags: [`approval:${payload.orderId}`] });
    // Sent once: a replay after the wait does not ask the reviewer again.
    await step.run("ask-reviewer", async () => {
      await fetch(`${shop()}/reviews`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ orderId: payload.orderId, approveUrl: approval.url }),
      });
    });
    logger.info("Waiting for a reviewer", { orderId: payload.orderId, tokenId: approval.id });

    const decision = await wait.forToken<{ approved: boolean }>(approval);
    if (!decision.ok) throw new AbortTaskRunError("No reviewer answered within a day");
    if (!decision.output.approved) return { status: "rejected" as const, chargeId, reference, receivedAt };

    const receipt = await sendReceipt.triggerAndWait({ orderId: payload.orderId, email: payload.email, amount: payload.amount }).unwrap();
    return { status: "fulfilled" as const, chargeId, reference, receivedAt, messageId: receipt.messageId, attempt: ctx.attempt.number };
  },
});
