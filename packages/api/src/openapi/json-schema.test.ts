import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toJsonSchema, type JsonSchema } from "./json-schema.ts";

describe("toJsonSchema (JSON Schema 2020-12 for OpenAPI 3.1)", () => {
  it("documents null as a type, never with `nullable`", () => {
    const schema = toJsonSchema(z.object({ externalId: z.string().nullable() }), {});
    expect(JSON.stringify(schema)).not.toContain("nullable");
    expect((schema.properties as Record<string, JsonSchema>).externalId).toEqual({ type: ["string", "null"] });
    expect(schema.$schema).toBeUndefined();
  });

  it("documents a Date as the ISO string JSON carries", () => {
    const schema = toJsonSchema(z.object({ delay: z.union([z.string(), z.date()]) }), {});
    expect((schema.properties as Record<string, JsonSchema>).delay).toEqual({ anyOf: [{ type: "string" }, { type: "string", format: "date-time" }] });
  });

  it("moves $defs to components.schemas and points refs there", () => {
    type Node = { children: Node[] };
    const Node: z.ZodType<Node> = z.object({ children: z.array(z.lazy(() => Node)) });
    z.globalRegistry.add(Node, { id: "TreeNode" });
    const defs: Record<string, JsonSchema> = {};
    const schema = toJsonSchema(z.object({ root: Node }), defs);
    expect(JSON.stringify(schema)).not.toContain("$defs");
    expect(JSON.stringify(schema)).toContain("#/components/schemas/TreeNode");
    expect(JSON.stringify(defs.TreeNode)).toContain("#/components/schemas/TreeNode");
    z.globalRegistry.remove(Node);
  });
});
