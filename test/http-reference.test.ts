import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildHttpReference, HTTP_REFERENCE_PATH } from "../scripts/http-reference.ts";

// docs/http-reference.md is generated from the OpenAPI document the API serves; a route, schema or
// summary that changed without `pnpm docs:http` leaves it stale, and this test says so.
describe("docs/http-reference.md", () => {
  it("is what `pnpm docs:http` generates from the API's current OpenAPI document", async () => {
    const generated = await buildHttpReference();
    const committed = readFileSync(HTTP_REFERENCE_PATH, "utf8");
    if (committed !== generated) {
      const a = committed.split("\n");
      const b = generated.split("\n");
      const line = a.findIndex((text, i) => text !== b[i]);
      throw new Error(
        `docs/http-reference.md is out of date: run \`pnpm docs:http\` and commit it.\n` +
          `first difference at line ${line + 1}:\n  committed: ${a[line] ?? "(end of file)"}\n  generated: ${b[line] ?? "(end of file)"}`,
      );
    }
    expect(committed).toBe(generated);
  });

  it("documents every operation of the document, grouped by tag, with its auth", async () => {
    const text = await buildHttpReference();
    expect(text).toContain("## runs");
    expect(text).toContain("### POST /api/v1/tasks/{taskId}/trigger");
    expect(text).toMatch(/### GET \/api\/v1\/projects\/\{projectRef\}\/runs\n[\s\S]*?- Auth: `Authorization: Bearer <credential>`, one of: personal access token\n/);
    expect(text).toMatch(/### POST \/api\/v1\/waitpoints\/tokens\/\{id\}\/callback\/\{hash\}\n[\s\S]*?- Auth: none/);
  });
});
