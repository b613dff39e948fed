import { step, task, wait } from "@svc/runtime";

/**
 * Waits for a human: creates a token, "sends" its URL, and checkpoints until someone completes it
 * (POST to the URL, or wait.completeToken). While it waits it holds no worker slot.
 */
export const approval = task({
  id: "approval",
  run: async (payload: { amount: number }) => {
    const token = await wait.createToken({ timeout: "1h", tags: ["approval"] });
    await step.run("notify-approver", () => {
      console.log(`approve ${payload.amount}: curl -X POST '${token.url}' -H 'content-type: application/json' -d '{"approved":true}'`);
    });
    const decision = await wait.forToken<{ approved: boolean }>(token);
    if (!decision.ok) return { status: "expired" };
    return { status: decision.output.approved ? "approved" : "rejected" };
  },
});
