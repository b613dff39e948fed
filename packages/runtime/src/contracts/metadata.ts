import { z } from "zod";
import { METADATA_KEY_PATTERN, metadataKeyProblem } from "../engine/metadata/operations.ts";

/** A JSON value (what metadata holds). */
const JsonValue = z.unknown().meta({ description: "any JSON value" });

const MetadataObject = z.record(z.string(), JsonValue);

const MetadataKey = z
  .string()
  .min(1)
  .superRefine((key, ctx) => {
    const problem = metadataKeyProblem(key);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  })
  .meta({
    pattern: METADATA_KEY_PATTERN,
    description: "A key, or a path into the object starting with `$.` (`$.progress.percent`); neither it nor a path's segment may be __proto__, constructor or prototype, nor a segment empty",
  });

/** One change of a run's metadata (Trigger.dev's RunMetadataChangeOperation). */
export const MetadataOperationBody = z.discriminatedUnion("type", [
  z.object({ type: z.literal("update"), value: MetadataObject }),
  z.object({ type: z.literal("set"), key: MetadataKey, value: JsonValue }),
  z.object({ type: z.literal("delete"), key: MetadataKey }),
  z.object({ type: z.literal("append"), key: MetadataKey, value: JsonValue }),
  z.object({ type: z.literal("remove"), key: MetadataKey, value: JsonValue }),
  z.object({ type: z.literal("increment"), key: MetadataKey, value: z.number() }),
]);

/**
 * Body of `PUT /api/v1/runs/{id}/metadata` (Trigger.dev's UpdateMetadataRequestBody): `operations`
 * to apply, or else `metadata` to replace the object with; `parentOperations` and
 * `rootOperations` change the run's parent's and root run's metadata. At least one of the four
 * (updateRunMetadata refuses a body without, with its own message; the document says so).
 */
export const UpdateMetadataBody = z
  .object({
    metadata: MetadataObject.optional(),
    operations: z.array(MetadataOperationBody).max(10_000).optional(),
    parentOperations: z.array(MetadataOperationBody).max(10_000).optional(),
    rootOperations: z.array(MetadataOperationBody).max(10_000).optional(),
  })
  .meta({ anyOf: [{ required: ["metadata"] }, { required: ["operations"] }, { required: ["parentOperations"] }, { required: ["rootOperations"] }] });
export type UpdateMetadataBody = z.infer<typeof UpdateMetadataBody>;

/** The run's metadata after the change (or as it is). */
export const MetadataResponse = z.object({ metadata: MetadataObject });
