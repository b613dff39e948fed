import { step, task, wait } from "@svc/runtime";

/**
 * A durable wait. The run creates a token and waits until someone completes it. Meanwhile the run
 * is a checkpoint in Postgres, not a process: it holds no worker slot, and a worker restart or a
 * code change does not lose it. Complete the token (its id is in the log, and in the run's
 * `waitingFor` while it waits):
 *
 *   curl -X POST "$SERVICE_API_URL/api/v1/waitpoints/tokens/<token id>/complete" \
 *     -H "Authorization: Bearer $SERVICE_SECRET_KEY" -H "Content-Type: application/json" \
 *     -d '{"output":{"approved":true}}'
 */
export const approval = task({
  id: "approval",
  run: async (payload: { amount: number }) => {
    const token = await wait.createToken({ timeout: "1h", tags: ["approval"] });
    // A step runs once: when the run resumes, its code runs again from the top (replay), and
    // recorded steps and waits return what they returned the first time.
    await step.run("ask-for-approval", () => {
      console.log(`approve ${payload.amount}? complete token ${token.id} (or POST to ${token.url})`);
    });
    const decision = await wait.forToken<{ approved: boolean }>(token);
    if (!decision.ok) return { status: "timed out" };
    return { status: decision.output.approved ? "approved" : "rejected", amount: payload.amount };
  },
});
