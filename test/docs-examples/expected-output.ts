/**
 * Expected output as the docs write it: the text a command prints, with `…` standing for any
 * text (`{"id":"run_…","isCached":false}`). Whitespace next to JSON punctuation and runs of
 * whitespace do not count, so a pretty-printed answer matches a one-line expectation, and
 * `{ greeting: 'Hello, Ada!', … }` matches what console.log prints for that object.
 */
export const ANY = "…";

function normalise(text: string): string {
  return text
    .trim()
    .replace(/\s+/g, " ")
    .replace(/ ?([{}[\],:]) ?/g, "$1")
    .replace(/ ?… ?/g, ANY);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * `…` next to a comma may also stand for nothing, comma included: `{"a":1,…,"c":3}` matches
 * `{"a":1,"c":3}` as well as `{"a":1,"b":2,"c":3}`, and `{"a":1,…}` matches `{"a":1}`.
 */
function pattern(expected: string): string {
  const pieces = normalise(expected).split(ANY);
  let regex = "";
  for (let i = 0; i < pieces.length; i++) {
    let piece = pieces[i]!;
    if (i > 0) {
      if (regex.endsWith(",")) {
        regex = `${regex.slice(0, -1)}(?:,[\\s\\S]*?)?`;
      } else if (piece.startsWith(",")) {
        regex += "(?:[\\s\\S]*?,)?";
        piece = piece.slice(1);
      } else {
        regex += "[\\s\\S]*?";
      }
    }
    regex += escapeRegExp(piece);
  }
  return regex;
}

export function matchesExpected(actual: string, expected: string): boolean {
  return new RegExp(`^${pattern(expected)}$`).test(normalise(actual));
}
