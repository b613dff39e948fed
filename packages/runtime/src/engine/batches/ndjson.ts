import { ValidationError } from "../../errors.ts";
import { BatchItem } from "../../contracts/batches.ts";
import { parseJsonText } from "../json-text.ts";

/**
 * Parses the NDJSON body of POST /api/v3/batches/{id}/items: one `{index, task, payload?, options?}`
 * per line, blank lines skipped. Any bad line rejects the whole body with its 1-based line number.
 */
export function parseBatchItemLines(text: string): BatchItem[] {
  const items: BatchItem[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line.length === 0) continue;
    const value = parseJsonText(line, `line ${i + 1}`);
    const parsed = BatchItem.safeParse(value);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((issue) => `${issue.path.length ? issue.path.join(".") + ": " : ""}${issue.message}`).join("; ");
      throw new ValidationError(`line ${i + 1}: ${issues}`);
    }
    items.push(parsed.data);
  }
  return items;
}
